/* sc_version: the version of the library loaded. */
#include "shardcomm/api.h"

SC_API int sc_version(void)
{
    return SC_VERSION_CODE;
}
