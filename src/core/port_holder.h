/* Who listens on a TCP port (port_holder.c). */
#ifndef SC_CORE_PORT_HOLDER_H
#define SC_CORE_PORT_HOLDER_H

#include <stddef.h>

/* "pid P (name)" of a process listening on TCP port (IPv4 or IPv6) in buf; 1 when one
 * was found and it is another process running this process's executable, 0 when one
 * was found otherwise, -1 when none was (no listener, another user's process, no
 * /proc). */
int sc_port_holder(int port, char *buf, size_t size);

#endif
