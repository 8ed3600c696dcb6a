/* CUDA kernels of the mixed-precision spec (cast_spec.h) and their launcher: casts
 * with a fused scale, the Inf/NaN check and the fused unscale + check. Memory-bound:
 * each thread moves a group of elements per step in one aligned 16-byte word on the
 * wider side (8 bytes on the narrower one, so that both sides of a warp's step are
 * contiguous), over a grid that strides across the buffer.
 * Not to be built with -ftz=true or --use_fast_math: float32 subnormals must survive
 * the multiplication as they do on the host. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "collectives/cast_kernels.h"
#include "collectives/cast_spec.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxDevices = 64; /* SM counts are cached for these ordinals */

/* Storage formats: the bits of one element, the spec's way to and from float32, and a
 * fast way that gives the same bits for everything but NaNs. For float16 that is the
 * hardware's cvt, which returns one canonical NaN; the spec's bit-level rounding costs
 * about 20 integer operations per element, which made float16 kernels compute-bound
 * (tests/gpu compares every float32 with the host twin). */
struct F32 {
    typedef uint32_t bits;
    static __device__ uint32_t widen(uint32_t x) { return x; }
    static __device__ uint32_t narrow(uint32_t x) { return x; }
    static __device__ float widen_fast(uint32_t x) { return __uint_as_float(x); }
    static __device__ uint32_t narrow_fast(float f) { return __float_as_uint(f); }
    static __device__ bool nonfinite(uint32_t x) { return sc_spec_f32_nonfinite(x); }
};

struct F16 {
    typedef uint16_t bits;
    static __device__ uint32_t widen(uint16_t h) { return sc_spec_f16_to_f32(h); }
    static __device__ uint16_t narrow(uint32_t x) { return sc_spec_f32_to_f16(x); }
    static __device__ float widen_fast(uint16_t h) { return __half2float(__ushort_as_half(h)); }
    static __device__ uint16_t narrow_fast(float f) { return __half_as_ushort(__float2half_rn(f)); }
    static __device__ bool nonfinite(uint16_t h) { return sc_spec_f16_nonfinite(h); }
};

struct BF16 {
    typedef uint16_t bits;
    static __device__ uint32_t widen(uint16_t b) { return sc_spec_bf16_to_f32(b); }
    static __device__ uint16_t narrow(uint32_t x) { return sc_spec_f32_to_bf16(x); }
    static __device__ float widen_fast(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }
    static __device__ uint16_t narrow_fast(float f)
    {
        return (uint16_t)(sc_spec_bf16_round(__float_as_uint(f)) >> 16);
    }
    static __device__ bool nonfinite(uint16_t b) { return sc_spec_bf16_nonfinite(b); }
};

/* Elements per thread and step: one 16-byte word of the wider type. */
template <typename S, typename D>
__host__ __device__ constexpr int group()
{
    return 16 / (sizeof(typename S::bits) > sizeof(typename D::bits) ? sizeof(typename S::bits)
                                                                      : sizeof(typename D::bits));
}

template <int BYTES> struct Word;
template <> struct Word<8> { typedef uint2 type; };
template <> struct Word<16> { typedef uint4 type; };

/* G elements of T at p, aligned to G * sizeof(T) bytes, one per word of w. */
template <typename T, int G>
__device__ __forceinline__ void load_group(const T *p, uint32_t w[G])
{
    union {
        typename Word<G * sizeof(T)>::type v;
        T e[G];
    } u;

    u.v = *reinterpret_cast<const typename Word<G * sizeof(T)>::type *>(p);
#pragma unroll
    for (int k = 0; k < G; k++)
        w[k] = u.e[k];
}

template <typename T, int G>
__device__ __forceinline__ void store_group(T *p, const uint32_t w[G])
{
    union {
        typename Word<G * sizeof(T)>::type v;
        T e[G];
    } u;

#pragma unroll
    for (int k = 0; k < G; k++)
        u.e[k] = (T)w[k];
    *reinterpret_cast<typename Word<G * sizeof(T)>::type *>(p) = u.v;
}

/* The element spec: src element to dst element. */
template <typename S, typename D>
__device__ __forceinline__ typename D::bits map1(typename S::bits x, float scale)
{
    return D::narrow(sc_spec_scale(S::widen(x), scale));
}

/* The same without the NaN rules, right when neither x nor the product is NaN; *nan
 * is set otherwise (a NaN input makes a NaN product, so the product tells). */
template <typename S, typename D>
__device__ __forceinline__ typename D::bits map1_fast(typename S::bits x, float scale,
                                                      bool *nan)
{
    float r = S::widen_fast(x) * scale;

    *nan |= r != r;
    return D::narrow_fast(r);
}

/* dst[i] = cast(src[i] * scale) for i < count; with CHECK, *flag = 1 when a result is
 * Inf or NaN (an input Inf or NaN always gives one). Elements [head, head + G * groups)
 * go a group per thread and step (src + head and dst + head are aligned for it), the
 * others one per thread. src == dst is allowed: each element is read before it is
 * written, by the same thread. */
template <typename S, typename D, bool CHECK>
__global__ void __launch_bounds__(kThreads)
    sc_map_kernel(const typename S::bits *src, typename D::bits *dst, size_t count,
                  size_t head, size_t groups, float scale, int32_t *flag)
{
    constexpr int G = group<S, D>();
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t tail = head + groups * G, rest = head + (count - tail);
    bool found = false;

    for (size_t g = tid; g < groups; g += stride) {
        size_t i = head + g * G;
        uint32_t w[G];

        uint32_t r[G];
        bool nan = false;

        load_group<typename S::bits, G>(src + i, w);
#pragma unroll
        for (int k = 0; k < G; k++)
            r[k] = map1_fast<S, D>((typename S::bits)w[k], scale, &nan);
        if (nan) { /* rare: the group again, by the spec */
#pragma unroll
            for (int k = 0; k < G; k++)
                r[k] = map1<S, D>((typename S::bits)w[k], scale);
        }
#pragma unroll
        for (int k = 0; k < G; k++)
            found |= D::nonfinite((typename D::bits)r[k]);
        store_group<typename D::bits, G>(dst + i, r);
    }
    for (size_t j = tid; j < rest; j += stride) {
        size_t i = j < head ? j : tail + (j - head);
        typename D::bits r = map1<S, D>(src[i], scale);
        found |= D::nonfinite(r);
        dst[i] = r;
    }
    /* One store per block that found something, none elsewhere: no atomics. */
    if (CHECK && __syncthreads_or(found) && threadIdx.x == 0)
        *flag = 1;
}

/* *flag = 1 when an element of buf is Inf or NaN; layout as sc_map_kernel's. */
template <typename F>
__global__ void __launch_bounds__(kThreads)
    sc_check_kernel(const typename F::bits *buf, size_t count, size_t head, size_t groups,
                    int32_t *flag)
{
    constexpr int G = group<F, F>();
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t tail = head + groups * G, rest = head + (count - tail);
    bool found = false;

    for (size_t g = tid; g < groups; g += stride) {
        uint32_t w[G];

        load_group<typename F::bits, G>(buf + head + g * G, w);
#pragma unroll
        for (int k = 0; k < G; k++)
            found |= F::nonfinite((typename F::bits)w[k]);
    }
    for (size_t j = tid; j < rest; j += stride)
        found |= F::nonfinite(buf[j < head ? j : tail + (j - head)]);
    if (__syncthreads_or(found) && threadIdx.x == 0)
        *flag = 1;
}

/* Multiprocessors of the current device, read once per device. */
int sm_count()
{
    static int cached[kMaxDevices];
    int dev = 0, n = 0;

    if (cudaGetDevice(&dev) != cudaSuccess)
        return 1; /* the launch that follows reports the error */
    if (dev >= 0 && dev < kMaxDevices && (n = __atomic_load_n(&cached[dev], __ATOMIC_RELAXED)))
        return n;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n < 1)
        return 1;
    if (dev >= 0 && dev < kMaxDevices)
        __atomic_store_n(&cached[dev], n, __ATOMIC_RELAXED);
    return n;
}

/* The layout of a call: head elements one by one until src is aligned for a group,
 * then whole groups, then the tail. When dst does not become aligned with src (their
 * offsets differ), every element goes one by one. */
template <typename S, typename D>
void split(const void *src, const void *dst, size_t count, size_t *head, size_t *groups)
{
    constexpr size_t G = group<S, D>(), ss = sizeof(typename S::bits),
                     ds = sizeof(typename D::bits);
    uintptr_t s = (uintptr_t)src, d = (uintptr_t)dst;
    size_t h = (G * ss - s % (G * ss)) % (G * ss) / ss;

    if (h > count)
        h = count;
    if ((d + h * ds) % (G * ds) != 0) {
        *head = *groups = 0;
        return;
    }
    *head = h;
    *groups = (count - h) / G;
}

/* Enough blocks for one work item per thread, at most 16 per multiprocessor (the
 * kernels stride over the rest). */
dim3 grid_for(size_t count, size_t groups, size_t per_group)
{
    size_t rest = count - groups * per_group, items = groups > rest ? groups : rest;
    size_t blocks = (items + kThreads - 1) / kThreads, cap = (size_t)sm_count() * 16;

    return dim3((unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks));
}

template <typename S, typename D, bool CHECK>
cudaError_t launch_map(const sc_kernel_job_t *job, cudaStream_t stream)
{
    const typename S::bits *src = static_cast<const typename S::bits *>(job->src);
    typename D::bits *dst = static_cast<typename D::bits *>(job->dst);
    size_t count = job->count, head, groups;
    float scale = job->scale;
    int32_t *flag = job->flag;
    void *args[] = {&src, &dst, &count, &head, &groups, &scale, &flag};

    split<S, D>(src, dst, count, &head, &groups);
    return cudaLaunchKernel(sc_map_kernel<S, D, CHECK>,
                            grid_for(count, groups, group<S, D>()), dim3(kThreads), args, 0,
                            stream);
}

template <typename F>
cudaError_t launch_check(const sc_kernel_job_t *job, cudaStream_t stream)
{
    const typename F::bits *buf = static_cast<const typename F::bits *>(job->src);
    size_t count = job->count, head, groups;
    int32_t *flag = job->flag;
    void *args[] = {&buf, &count, &head, &groups, &flag};

    split<F, F>(buf, buf, count, &head, &groups);
    return cudaLaunchKernel(sc_check_kernel<F>, grid_for(count, groups, group<F, F>()),
                            dim3(kThreads), args, 0, stream);
}

template <typename S>
cudaError_t launch_cast_from(const sc_kernel_job_t *job, cudaStream_t stream)
{
    switch (job->dst_type) {
    case SC_FLOAT16:
        return launch_map<S, F16, false>(job, stream);
    case SC_BFLOAT16:
        return launch_map<S, BF16, false>(job, stream);
    default:
        return launch_map<S, F32, false>(job, stream);
    }
}

} /* namespace */

extern "C" int sc_kernel_launch(const sc_kernel_job_t *job, sc_stream_t stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    sc_dtype_t t = job->src_type;

    switch (job->kind) {
    case SC_KERNEL_CAST:
        return t == SC_FLOAT16    ? launch_cast_from<F16>(job, s)
               : t == SC_BFLOAT16 ? launch_cast_from<BF16>(job, s)
                                  : launch_cast_from<F32>(job, s);
    case SC_KERNEL_CHECK_FINITE:
        return t == SC_FLOAT16    ? launch_check<F16>(job, s)
               : t == SC_BFLOAT16 ? launch_check<BF16>(job, s)
                                  : launch_check<F32>(job, s);
    default:
        return t == SC_FLOAT16    ? launch_map<F16, F16, true>(job, s)
               : t == SC_BFLOAT16 ? launch_map<BF16, BF16, true>(job, s)
                                  : launch_map<F32, F32, true>(job, s);
    }
}
