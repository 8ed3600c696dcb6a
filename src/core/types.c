/* Data type and reduction op names and sizes. */
#include <string.h>

#include "core/dtype.h"
#include "core/error.h"
#include "shardcomm/types.h"

static const struct {
    const char *name;
    size_t size;
} sc_dtypes[SC_DTYPE_COUNT] = {
    [SC_FLOAT32] = {"float32", 4}, [SC_FLOAT64] = {"float64", 8},
    [SC_FLOAT16] = {"float16", 2}, [SC_BFLOAT16] = {"bfloat16", 2},
    [SC_INT8] = {"int8", 1},       [SC_UINT8] = {"uint8", 1},
    [SC_INT32] = {"int32", 4},     [SC_INT64] = {"int64", 8},
    [SC_FLOAT8_E4M3] = {"float8_e4m3", 1}, [SC_FLOAT8_E5M2] = {"float8_e5m2", 1},
};

static const struct {
    const char *alias;
    sc_dtype_t dtype;
} sc_dtype_aliases[] = {
    {"float", SC_FLOAT32}, {"double", SC_FLOAT64}, {"half", SC_FLOAT16},
    {"fp32", SC_FLOAT32},  {"fp64", SC_FLOAT64},   {"fp16", SC_FLOAT16},
    {"bf16", SC_BFLOAT16}, {"f8e4m3", SC_FLOAT8_E4M3}, {"f8e5m2", SC_FLOAT8_E5M2},
    {"fp8_e4m3", SC_FLOAT8_E4M3}, {"fp8_e5m2", SC_FLOAT8_E5M2},
};

static const char *const sc_op_names[SC_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};

int sc_dtype_is_float(sc_dtype_t d)
{
    return d == SC_FLOAT32 || d == SC_FLOAT64 || d == SC_FLOAT16 || d == SC_BFLOAT16 ||
           d == SC_FLOAT8_E4M3 || d == SC_FLOAT8_E5M2;
}

int sc_dtype_avg_premultiplies(sc_dtype_t d)
{
    return d == SC_FLOAT16 || d == SC_BFLOAT16 || d == SC_FLOAT8_E4M3 || d == SC_FLOAT8_E5M2;
}

SC_API size_t sc_dtype_size(sc_dtype_t dtype)
{
    return ((unsigned)dtype < SC_DTYPE_COUNT) ? sc_dtypes[dtype].size : 0;
}

SC_API const char *sc_dtype_name(sc_dtype_t dtype)
{
    return ((unsigned)dtype < SC_DTYPE_COUNT) ? sc_dtypes[dtype].name : "unknown";
}

SC_API sc_status_t sc_dtype_from_name(const char *name, sc_dtype_t *dtype)
{
    if (!name || !dtype)
        return sc_error(SC_ERR_INVALID_ARG, "sc_dtype_from_name: null argument");
    for (int i = 0; i < SC_DTYPE_COUNT; i++) {
        if (strcmp(name, sc_dtypes[i].name) == 0) {
            *dtype = (sc_dtype_t)i;
            return SC_SUCCESS;
        }
    }
    for (size_t i = 0; i < sizeof(sc_dtype_aliases) / sizeof(sc_dtype_aliases[0]); i++) {
        if (strcmp(name, sc_dtype_aliases[i].alias) == 0) {
            *dtype = sc_dtype_aliases[i].dtype;
            return SC_SUCCESS;
        }
    }
    return sc_error(SC_ERR_INVALID_ARG,
                    "unknown dtype '%s' (expected int8 uint8 int32 int64 half float double "
                    "bfloat16 float16 float32 float64 float8_e4m3 float8_e5m2)", name);
}

SC_API const char *sc_op_name(sc_op_t op)
{
    return ((unsigned)op < SC_OP_COUNT) ? sc_op_names[op] : "unknown";
}

SC_API sc_status_t sc_op_from_name(const char *name, sc_op_t *op)
{
    if (!name || !op)
        return sc_error(SC_ERR_INVALID_ARG, "sc_op_from_name: null argument");
    for (int i = 0; i < SC_OP_COUNT; i++) {
        if (strcmp(name, sc_op_names[i]) == 0) {
            *op = (sc_op_t)i;
            return SC_SUCCESS;
        }
    }
    return sc_error(SC_ERR_INVALID_ARG, "unknown op '%s' (expected sum prod min max avg)",
                    name);
}
