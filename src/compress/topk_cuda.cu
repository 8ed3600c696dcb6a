/* CUDA radix select of the top k magnitudes, selecting exactly what the host's exact
 * selection selects: the same keys (the bits without the sign, every NaN one key above
 * Inf), ties at the k-th key taken by the lowest index, indices ascending, the signed
 * elements as values. Digits of 11 key bits from the top: per pass a histogram of the
 * elements whose higher digits match (shared-memory bins, warp-aggregated atomics) and a
 * one-block kernel that picks the digit holding the k-th key, so no pass waits for the
 * host. Then tiles of 4096 elements count what they hold above and at the k-th key, one
 * block scans the tiles' counts, and each tile writes its elements in index order at its
 * offset. Everything runs on the caller's stream; C linkage for topk_device_cuda.c. */
#include <cuda_runtime.h>
#include <stdint.h>

#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>

#include "compress/topk_device.h"

namespace {

constexpr unsigned kDigitBits = 11;
constexpr int kBins = 1 << kDigitBits;
constexpr int kHistThreads = 512;
constexpr int kHistBlocksPerSm = 4;
constexpr int kPickThreads = kBins / 2;   /* two bins per thread */
constexpr int kTileThreads = 256;
constexpr int kTileItems = 16;
constexpr int kTile = kTileThreads * kTileItems;
constexpr int kScanThreads = 1024;

/* The select's progress on the device: the key digits chosen so far, and how many
 * elements with that prefix the selection still needs (after the last pass: the k-th
 * key, and how many ties at it to take, lowest indices first). */
struct Progress {
    unsigned long long prefix;
    unsigned long long need;
};

/* Per tile: elements above the k-th key and at it; then, from the scan, the ties at it
 * in earlier tiles and where the tile's output starts. */
struct Tiles {
    unsigned *gt;
    unsigned *eq;
    unsigned long long *eq_before;
    unsigned long long *out_before;
};

/* Element bits T, key K (32 bits for 2- and 4-byte elements, 64 for 8). */
template <typename K, typename T>
__device__ __forceinline__ K topk_key(T bits, unsigned key_bits, K nan_key)
{
    K k = (K)bits & (((K)1 << key_bits) - 1);
    return k > nan_key ? nan_key : k;
}

__global__ void __launch_bounds__(kPickThreads)
topk_init_kernel(Progress *p, unsigned long long *hist, unsigned long long k)
{
    for (int b = threadIdx.x; b < kBins; b += blockDim.x)
        hist[b] = 0;
    if (threadIdx.x == 0) {
        p->prefix = 0;
        p->need = k;
    }
}

/* hist[digit] += the elements whose key >> pshift is the prefix chosen so far, by the
 * digit (key >> shift) & dmask. Every warp runs the same number of rounds, so that the
 * whole warp takes part in __match_any_sync. */
template <typename T, typename K>
__global__ void __launch_bounds__(kHistThreads)
topk_hist_kernel(const T *x, size_t n, unsigned key_bits, K nan_key, unsigned pshift,
                 unsigned shift, unsigned dmask, const Progress *p, unsigned long long *hist)
{
    __shared__ unsigned bins[kBins];
    const K prefix = (K)p->prefix;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t rounds = (n + stride - 1) / stride;
    const unsigned lane = threadIdx.x % 32;

    for (int b = threadIdx.x; b < kBins; b += blockDim.x)
        bins[b] = 0;
    __syncthreads();
    for (size_t r = 0, i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; r < rounds;
         r++, i += stride) {
        unsigned bin = 0xffffffffu, peers;
        if (i < n) {
            K key = topk_key<K>(x[i], key_bits, nan_key);
            if ((key >> pshift) == prefix)
                bin = (unsigned)(key >> shift) & dmask;
        }
        peers = __match_any_sync(0xffffffffu, bin);
        if (bin != 0xffffffffu && lane == (unsigned)(__ffs((int)peers) - 1))
            atomicAdd(&bins[bin], (unsigned)__popc((int)peers));
    }
    __syncthreads();
    for (unsigned b = threadIdx.x; b <= dmask; b += blockDim.x)
        if (bins[b])
            atomicAdd(&hist[b], (unsigned long long)bins[b]);
}

/* One block: the digit d whose bin holds the need-th largest element in play (counting
 * from the top digit down), appended to the prefix; need drops by the elements in the
 * bins above d. Clears the histogram for the next pass. */
__global__ void __launch_bounds__(kPickThreads)
topk_pick_kernel(unsigned long long *hist, unsigned dmask, unsigned digit_bits, Progress *p)
{
    typedef cub::BlockScan<unsigned long long, kPickThreads> Scan;
    __shared__ typename Scan::TempStorage tmp;
    const unsigned long long need = p->need;
    unsigned long long c[2], incl[2];

    /* Item r of the scan is digit dmask - r: the inclusive sum counts from the top. */
    for (int j = 0; j < 2; j++) {
        unsigned r = 2 * threadIdx.x + j;
        c[j] = r <= dmask ? hist[dmask - r] : 0;
    }
    Scan(tmp).InclusiveSum(c, incl);
    __syncthreads();
    for (int j = 0; j < 2; j++) {
        unsigned r = 2 * threadIdx.x + j;
        if (r > dmask)
            continue;
        if (incl[j] >= need && incl[j] - c[j] < need) {
            p->prefix = (p->prefix << digit_bits) | (dmask - r);
            p->need = need - (incl[j] - c[j]);
        }
        hist[dmask - r] = 0;
    }
}

template <typename T>
struct TileLoad {
    typedef cub::BlockLoad<T, kTileThreads, kTileItems, cub::BLOCK_LOAD_WARP_TRANSPOSE> Load;
};

/* The tile's elements, thread t holding t * kTileItems .. + kTileItems - 1 (index order);
 * returns how many of the tile are inside x. */
template <typename T>
__device__ __forceinline__ int topk_tile_load(const T *x, size_t n,
                                              typename TileLoad<T>::Load::TempStorage &tmp,
                                              T (&v)[kTileItems])
{
    size_t base = (size_t)blockIdx.x * kTile;
    int valid = n - base < (size_t)kTile ? (int)(n - base) : kTile;

    typename TileLoad<T>::Load(tmp).Load(x + base, v, valid, T(0));
    return valid;
}

/* One block over all tiles in rounds of kScanThreads, carrying the sums: the ties in
 * earlier tiles, and the output offset (a tile takes its elements above the k-th key
 * and the ties still needed). */
__global__ void __launch_bounds__(kScanThreads)
topk_scan_tiles_kernel(const Progress *p, Tiles tiles, size_t ntiles)
{
    typedef cub::BlockScan<unsigned long long, kScanThreads> Scan;
    __shared__ typename Scan::TempStorage tmp;
    const unsigned long long need = p->need;
    unsigned long long eq_carry = 0, out_carry = 0;

    for (size_t b0 = 0; b0 < ntiles; b0 += kScanThreads) {
        size_t b = b0 + threadIdx.x;
        unsigned long long eq = b < ntiles ? tiles.eq[b] : 0;
        unsigned long long gt = b < ntiles ? tiles.gt[b] : 0;
        unsigned long long eq_before, eq_sum, take, out_before, out_sum;

        Scan(tmp).ExclusiveSum(eq, eq_before, eq_sum);
        __syncthreads();
        eq_before += eq_carry;
        take = need > eq_before ? need - eq_before : 0;
        take = take < eq ? take : eq;
        Scan(tmp).ExclusiveSum(gt + take, out_before, out_sum);
        __syncthreads();
        if (b < ntiles) {
            tiles.eq_before[b] = eq_before;
            tiles.out_before[b] = out_carry + out_before;
        }
        eq_carry += eq_sum;
        out_carry += out_sum;
    }
}

/* A tile's pass after the select. COUNT: the tile's elements above the k-th key and at
 * it, into tiles.gt and tiles.eq. Else (after the scan of the tiles) the tile writes its
 * elements above the k-th key and its ties among the first need, in index order, from
 * its output offset. */
template <typename T, typename K, typename I, bool COUNT>
__global__ void __launch_bounds__(kTileThreads)
topk_tile_kernel(const T *x, size_t n, unsigned key_bits, K nan_key, const Progress *p,
                 Tiles tiles, I *indices, T *values)
{
    typedef cub::BlockScan<unsigned, kTileThreads> Scan;
    __shared__ union {
        typename TileLoad<T>::Load::TempStorage load;
        typename Scan::TempStorage scan;
    } tmp;
    const K kth = (K)p->prefix;
    const unsigned long long need = p->need;
    const size_t first = (size_t)blockIdx.x * kTile + (size_t)threadIdx.x * kTileItems;
    T v[kTileItems];
    unsigned gt = 0, eq = 0, before, sum;
    unsigned long long tie, out;
    int valid = topk_tile_load(x, n, tmp.load, v), take[kTileItems];

    __syncthreads();
    for (int j = 0; j < kTileItems; j++) {
        K key = topk_key<K>(v[j], key_bits, nan_key);
        take[j] = (int)threadIdx.x * kTileItems + j < valid && key >= kth;
        gt += take[j] && key > kth;
        eq += take[j] && key == kth;
    }
    Scan(tmp.scan).ExclusiveSum(eq, before, sum);
    __syncthreads();
    if (COUNT) {
        Scan(tmp.scan).ExclusiveSum(gt, before, gt);
        if (threadIdx.x == 0) {
            tiles.gt[blockIdx.x] = gt;
            tiles.eq[blockIdx.x] = sum;
        }
        return;
    }
    /* Ties are taken in index order: this thread's first is tie number tie overall. */
    tie = tiles.eq_before[blockIdx.x] + before;
    gt = 0;
    for (int j = 0; j < kTileItems; j++) {
        if (take[j] && topk_key<K>(v[j], key_bits, nan_key) == kth)
            take[j] = tie++ < need;
        gt += take[j];
    }
    Scan(tmp.scan).ExclusiveSum(gt, before);
    out = tiles.out_before[blockIdx.x] + before;
    for (int j = 0; j < kTileItems; j++)
        if (take[j]) {
            indices[out] = (I)(first + j);
            values[out] = v[j];
            out++;
        }
}

int sm_count(void)
{
    int dev = 0, n = 0;

    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        n < 1)
        return 1;
    return n;
}

/* The bytes before each scratch array, rounded up to 256. */
size_t align256(size_t b)
{
    return (b + 255) / 256 * 256;
}

template <typename T, typename K, typename I, bool COUNT>
cudaError_t topk_tiles(const sc_topk_device_job_t *job, const Progress *p, Tiles tiles,
                       size_t ntiles, cudaStream_t s)
{
    topk_tile_kernel<T, K, I, COUNT><<<(unsigned)ntiles, kTileThreads, 0, s>>>(
        static_cast<const T *>(job->x), job->n, job->key_bits, (K)job->nan_key, p, tiles,
        static_cast<I *>(job->indices), static_cast<T *>(job->values));
    return cudaGetLastError();
}

template <typename T, typename K>
cudaError_t topk_select(const sc_topk_device_job_t *job, cudaStream_t s)
{
    const T *x = static_cast<const T *>(job->x);
    const K nan_key = (K)job->nan_key;
    const size_t ntiles = (job->n + kTile - 1) / kTile;
    size_t hist_off = 256, gt_off = hist_off + align256(kBins * sizeof(unsigned long long));
    size_t eq_off = gt_off + align256(ntiles * sizeof(unsigned));
    size_t eqb_off = eq_off + align256(ntiles * sizeof(unsigned));
    size_t outb_off = eqb_off + align256(ntiles * sizeof(unsigned long long));
    size_t bytes = outb_off + ntiles * sizeof(unsigned long long);
    size_t blocks = (job->n + kHistThreads - 1) / kHistThreads,
           cap = (size_t)sm_count() * kHistBlocksPerSm;
    char *scratch = NULL;
    Progress *p;
    unsigned long long *hist;
    Tiles tiles;
    cudaError_t err, freed;

    err = cudaMallocAsync((void **)&scratch, bytes, s);
    if (err != cudaSuccess)
        return err;
    p = reinterpret_cast<Progress *>(scratch);
    hist = reinterpret_cast<unsigned long long *>(scratch + hist_off);
    tiles.gt = reinterpret_cast<unsigned *>(scratch + gt_off);
    tiles.eq = reinterpret_cast<unsigned *>(scratch + eq_off);
    tiles.eq_before = reinterpret_cast<unsigned long long *>(scratch + eqb_off);
    tiles.out_before = reinterpret_cast<unsigned long long *>(scratch + outb_off);
    if (blocks > cap)
        blocks = cap;
    topk_init_kernel<<<1, kPickThreads, 0, s>>>(p, hist, job->k);
    err = cudaGetLastError();
    /* A launch that fails stops the sequence: later kernels would read a half-made
     * progress and write out of place. */
    for (unsigned pshift = job->key_bits; pshift > 0 && err == cudaSuccess;) {
        unsigned shift = pshift > kDigitBits ? pshift - kDigitBits : 0;
        unsigned dmask = (1u << (pshift - shift)) - 1;

        topk_hist_kernel<T, K><<<(unsigned)blocks, kHistThreads, 0, s>>>(
            x, job->n, job->key_bits, nan_key, pshift, shift, dmask, p, hist);
        err = cudaGetLastError();
        if (err != cudaSuccess)
            break;
        topk_pick_kernel<<<1, kPickThreads, 0, s>>>(hist, dmask, pshift - shift, p);
        err = cudaGetLastError();
        pshift = shift;
    }
    if (err == cudaSuccess)
        err = topk_tiles<T, K, uint32_t, true>(job, p, tiles, ntiles, s);
    if (err == cudaSuccess) {
        topk_scan_tiles_kernel<<<1, kScanThreads, 0, s>>>(p, tiles, ntiles);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess)
        err = job->index_bits == 32
                  ? topk_tiles<T, K, uint32_t, false>(job, p, tiles, ntiles, s)
                  : topk_tiles<T, K, unsigned long long, false>(job, p, tiles, ntiles, s);
    freed = cudaFreeAsync(scratch, s);
    return err != cudaSuccess ? err : freed;
}

} /* namespace */

extern "C" int sc_topk_cuda_select(const sc_topk_device_job_t *job, sc_stream_t stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);

    switch (job->width) {
    case 2: return (int)topk_select<uint16_t, uint32_t>(job, s);
    case 4: return (int)topk_select<uint32_t, uint32_t>(job, s);
    default: return (int)topk_select<unsigned long long, unsigned long long>(job, s);
    }
}
