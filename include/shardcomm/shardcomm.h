/* shardcomm: the communication core of sharded data-parallel training. Identifiers
 * beginning with sc_ or SC_ are reserved for the library (its static archive holds
 * internal functions of that prefix). */
#ifndef SHARDCOMM_H
#define SHARDCOMM_H

#include "shardcomm/api.h"
#include "shardcomm/status.h"
#include "shardcomm/types.h"
#include "shardcomm/memory.h"
#include "shardcomm/comm.h"
#include "shardcomm/collectives.h"
#include "shardcomm/kernels.h"
#include "shardcomm/info.h"
#include "shardcomm/reducer.h"
#include "shardcomm/compress.h"

#endif
