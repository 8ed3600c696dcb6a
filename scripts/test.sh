#!/usr/bin/env bash
# The whole test suite: installs dependencies, then builds and runs every CTest test
# (unit, multirank, fault, install; gpu tests report themselves skipped without a GPU)
# in both variants: with the device path (CUDA + NCCL, when the toolkit is installed)
# and host-only. Last, a host-only build with AddressSanitizer + UBSan runs the unit
# tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"

# The device-path variant. AUTO falls back to host-only where no CUDA toolkit is
# installed; say so, since the CUDA variant then goes untested.
"$root/scripts/build.sh" -DSC_WITH_CUDA=AUTO
if ! grep -q '^SC_HAVE_CUDA_BUILD:INTERNAL=ON' "$root/build/CMakeCache.txt"; then
  echo "test.sh: no CUDA toolkit found: the CUDA variant was not built (install nvcc" \
       "and NCCL to build it)" >&2
fi
(cd "$root/build" && ctest --output-on-failure --timeout 300 -j1)

BUILD_DIR="$root/build-host" "$root/scripts/build.sh" -DSC_WITH_CUDA=OFF
(cd "$root/build-host" && ctest --output-on-failure --timeout 300 -j1)

BUILD_DIR="$root/build-asan" "$root/scripts/build.sh" -DSC_SANITIZE=ON -DSC_BUILD_BENCH=OFF \
  -DSC_WITH_CUDA=OFF
# UCX's memory hooks and ASan's interceptors must not both patch malloc and mmap.
(cd "$root/build-asan" && UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none \
  ctest --output-on-failure --timeout 300 -L unit)
