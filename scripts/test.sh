#!/usr/bin/env bash
# The whole test suite: installs dependencies, then builds and runs every CTest test
# (unit, multirank, fault, install; gpu tests report themselves skipped without a GPU)
# with the device path (CUDA + NCCL, when the toolkit is installed), and builds the
# host-only variant and runs what differs there (below). Then a host-only build with AddressSanitizer + UBSan runs the unit
# and the fault tests and the compressor's multi-rank fuzzers, and one with
# ThreadSanitizer the tests of the threaded parts: the reducer (its finisher thread,
# marks from several threads, hooks), the compressed all-reduce and the top-k hook (its
# selection worker and gated all-gathers) across ranks, the ranks killed in the middle
# of those, and communicators split at once from two threads. BUILD_DIR names the first
# build directory (default build/, as scripts/build.sh); the others are beside it:
# BUILD_DIR-host, BUILD_DIR-asan, -tsan.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"

# The device-path variant. AUTO falls back to host-only where no CUDA toolkit is
# installed; say so, since the CUDA variant then goes untested.
BUILD_DIR="$build" "$root/scripts/build.sh" -DSC_WITH_CUDA=AUTO
if ! grep -q '^SC_HAVE_CUDA_BUILD:INTERNAL=ON' "$build/CMakeCache.txt"; then
  echo "test.sh: no CUDA toolkit found: the CUDA variant was not built (install nvcc" \
       "and NCCL to build it)" >&2
fi
# The unit tests (one process, one thread mostly) two at a time, the multi-rank ones one
# at a time (their ranks keep 2 cores busy), then those labelled waits, which mostly
# sleep (timeouts running out), eight at a time, and beside them those labelled
# background (the embedded builds of shardcomm: nothing timed, at nice 19) on the cores
# the sleepers leave idle.
(cd "$build" && ctest --output-on-failure --timeout 300 -j2 -L unit -LE waits &&
  ctest --output-on-failure --timeout 300 -j1 -LE 'unit|waits|background' &&
  ctest --output-on-failure --timeout 300 -j8 -L 'waits|background')

# The host-only variant: what differs from the variant above is the stand-ins for the
# CUDA runtime (src/*/*_nocuda.c, about 130 lines: every pointer is host memory) and the
# build, packaging and install without CUDA. It runs the unit and install tests (the
# API's pointer checks, the tools, the installed package) and one pass of each
# collective, the reducer and the compressor across 2 and 4 ranks (about 2 minutes);
# the multi-rank and fault suites above run the same host code (host-only too where no
# toolkit is installed), and it runs under ASan and TSan below, host-only. It ran the
# whole suite again until 2026-12-06 (about 8.5 of CI's 31 minutes). Its unit tests two
# at a time as above, the install tests that build no shardcomm one at a time, then those
# labelled waits or background eight at a time (one at a time, the whole took 190 s).
BUILD_DIR="$build-host" "$root/scripts/build.sh" -DSC_WITH_CUDA=OFF
(cd "$build-host" && ctest --output-on-failure --timeout 300 -j2 -L unit -LE 'waits|background' &&
  ctest --output-on-failure --timeout 300 -j1 -L install -LE 'unit|waits|background' &&
  ctest --output-on-failure --timeout 300 -j8 -L 'unit|install' -L 'waits|background' &&
  ctest --output-on-failure --timeout 300 -j1 -L multirank -E '\.fuzz\.' \
    -R '^(coll\.(allreduce|reduce_scatter|allgather|broadcast|sendrecv|alltoall)\.np[24]|(reducer|compress)\.[a-z_]+\.np2)$')

BUILD_DIR="$build-asan" "$root/scripts/build.sh" -DSC_SANITIZE=ON -DSC_BUILD_BENCH=OFF \
  -DSC_WITH_CUDA=OFF
# UCX's memory hooks and ASan's interceptors must not both patch malloc and mmap. Then
# the fault tests (dead, silent and mismatched ranks, aborts, links cut across network
# namespaces), where transfers are left in flight and UCX may still touch memory the
# library or the test gave up: under ASan such an access is an error, not silent
# corruption. Left out: the killed rank on registered memory (64 MiB per rank: past its
# 20 s limit under ASan). Then the compressor's differential fuzzers across ranks (about
# 25 s), whose checks read the saved state's records as the library writes them. The
# unit tests two at a time and those that mostly sleep eight at a time, as above (one at
# a time they took 200 s).
(cd "$build-asan" && export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none &&
  ctest --output-on-failure --timeout 300 -j2 -L unit -LE waits &&
  ctest --output-on-failure --timeout 300 -j8 -L unit -L waits &&
  ctest --output-on-failure --timeout 300 -L fault -LE waits \
    -E '^fault\.killed_rank_fails_pending_and_later_calls\.registered$' &&
  ctest --output-on-failure --timeout 300 -j8 -L fault -L waits &&
  ctest --output-on-failure --timeout 300 -L multirank -R '^compress\.fuzz\.')

BUILD_DIR="$build-tsan" "$root/scripts/build.sh" -DSC_SANITIZE_THREAD=ON \
  -DSC_BUILD_BENCH=OFF -DSC_WITH_CUDA=OFF
# Left out: the selector's own unit tests and the largest multi-rank ones, which take
# minutes each under ThreadSanitizer (the selector's threads still run in the rest),
# the killed rank on registered memory (64 MiB per rank: past its 20 s limit there;
# it has no thread of its own to check), and the compressor's hostile loads
# (compress.fuzz.load_hostile: one thread throughout, nothing for TSan to check, and its
# forged states' allocations of up to the machine's memory took 25-31 s of its 60 s
# limit alone there, over 8 GB resident, and timed out at 62 s beside other work; 0.13 s
# in Release; the ASan run keeps it). The reducer's and the compressor's
# differential fuzzers run here too (a few cases each under ThreadSanitizer, with
# marks from two threads and selection threads). The refusal notices (a caller's refusal
# against the progress thread's scans) too; those that mostly sleep eight at a time.
# The library loaded with dlopen and closed with dlclose (api.library_load.*: the unload's
# aborts and the end of the library's threads, against those threads).
# A world of one (its progress thread, no TCP), whose test keeps the UCX_MEM_* and
# TSAN_OPTIONS below through its cleared environment (tests/launch/CMakeLists.txt:
# without them it crashed in TSan's runtime as a thread ended).
# tests/tsan.supp: the descriptor scan of transport_cloexec.c, which TSan takes for a
# race with UCX's thread creating descriptors (it is not one: see the file).
tsan_run='^(reducer|compress)\.|^fault\.(killed|refused)|^comm\.concurrent'
tsan_run+='|^api\.library_load\.|^launch\.world_of_one'
tsan_skip='^compress\.topk\.|large|converges|200003|150001|131101|registered|load_hostile'
(cd "$build-tsan" && export UCX_MEM_EVENTS=no UCX_MEM_MALLOC_HOOKS=no \
  UCX_MEM_MMAP_HOOK_MODE=none \
  TSAN_OPTIONS="halt_on_error=1 report_signal_unsafe=0 suppressions=$root/tests/tsan.supp" &&
  ctest --output-on-failure --timeout 300 -R "$tsan_run" -E "$tsan_skip" -LE waits &&
  ctest --output-on-failure --timeout 300 -j8 -R "$tsan_run" -E "$tsan_skip" -L waits)
