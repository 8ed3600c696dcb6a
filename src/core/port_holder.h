/* Who listens on a TCP port (port_holder.c). */
#ifndef SC_CORE_PORT_HOLDER_H
#define SC_CORE_PORT_HOLDER_H

#include <stddef.h>

/* "pid P (name)" of a process listening on TCP port (IPv4 or IPv6) in buf; 0 when one
 * was found, -1 otherwise (no listener, another user's process, no /proc). */
int sc_port_holder(int port, char *buf, size_t size);

#endif
