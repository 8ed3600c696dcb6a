/* CUDA kernels of the reducer's element work on device buckets that the cast kernels
 * do not cover: the scaled accumulation of iterations without sync (every dtype the
 * reducer takes) and the scaled copy of float64. The arithmetic is the host twin's
 * (reducer_kernels.c): float32 products and sums, rounded once to float16/bfloat16;
 * float64 in float64; integers wrap. No contraction into FMA (__fmul_rn, __fadd_rn),
 * so that results equal the host's bit for bit. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "collectives/reducer_device.h"
#include "shardcomm/types.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;

template <typename T> struct Acc;

template <> struct Acc<float> {
    static __device__ float apply(float d, float s, float f, bool acc)
    {
        float p = __fmul_rn(s, f);
        return acc ? __fadd_rn(d, p) : p;
    }
};

template <> struct Acc<double> {
    static __device__ double apply(double d, double s, double f, bool acc)
    {
        double p = __dmul_rn(s, f);
        return acc ? __dadd_rn(d, p) : p;
    }
};

template <> struct Acc<__half> {
    static __device__ __half apply(__half d, __half s, float f, bool acc)
    {
        float p = __fmul_rn(__half2float(s), f);
        return __float2half_rn(acc ? __fadd_rn(__half2float(d), p) : p);
    }
};

template <> struct Acc<__nv_bfloat16> {
    static __device__ __nv_bfloat16 apply(__nv_bfloat16 d, __nv_bfloat16 s, float f, bool acc)
    {
        float p = __fmul_rn(__bfloat162float(s), f);
        return __float2bfloat16_rn(acc ? __fadd_rn(__bfloat162float(d), p) : p);
    }
};

template <typename T, typename F>
__global__ void scale_kernel(T *dst, const T *src, size_t n, F f, bool acc)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = Acc<T>::apply(dst[i], src[i], f, acc);
}

/* Integers: two's complement addition wraps (unsigned arithmetic of the same width). */
template <typename U>
__global__ void add_wrap_kernel(U *dst, const U *src, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = (U)(dst[i] + src[i]);
}

int blocks_for(size_t n)
{
    size_t b = (n + kThreads - 1) / kThreads;
    return b > (size_t)kMaxBlocks ? kMaxBlocks : (int)(b ? b : 1);
}

} // namespace

extern "C" int sc_reducer_launch_scale(int dtype, void *dst, const void *src, size_t count,
                                       double scale, int accumulate, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    int g = blocks_for(count);
    bool acc = accumulate != 0;

    if (count == 0)
        return 0;
    switch (dtype) {
    case SC_FLOAT32:
        scale_kernel<float, float><<<g, kThreads, 0, s>>>((float *)dst, (const float *)src,
                                                          count, (float)scale, acc);
        break;
    case SC_FLOAT64:
        scale_kernel<double, double><<<g, kThreads, 0, s>>>((double *)dst, (const double *)src,
                                                            count, scale, acc);
        break;
    case SC_FLOAT16:
        scale_kernel<__half, float><<<g, kThreads, 0, s>>>((__half *)dst, (const __half *)src,
                                                           count, (float)scale, acc);
        break;
    case SC_BFLOAT16:
        scale_kernel<__nv_bfloat16, float><<<g, kThreads, 0, s>>>(
            (__nv_bfloat16 *)dst, (const __nv_bfloat16 *)src, count, (float)scale, acc);
        break;
    case SC_INT8:
    case SC_UINT8:
        add_wrap_kernel<uint8_t><<<g, kThreads, 0, s>>>((uint8_t *)dst, (const uint8_t *)src,
                                                        count);
        break;
    case SC_INT32:
        add_wrap_kernel<uint32_t><<<g, kThreads, 0, s>>>((uint32_t *)dst,
                                                         (const uint32_t *)src, count);
        break;
    case SC_INT64:
        add_wrap_kernel<uint64_t><<<g, kThreads, 0, s>>>((uint64_t *)dst,
                                                         (const uint64_t *)src, count);
        break;
    default:
        return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}
