#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every CTest test (unit,
# multirank, fault), then rebuilds with AddressSanitizer + UBSan and runs the unit tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"

"$root/scripts/build.sh"
(cd "$root/build" && ctest --output-on-failure --timeout 300 -j1)

BUILD_DIR="$root/build-asan" "$root/scripts/build.sh" -DSC_SANITIZE=ON -DSC_BUILD_BENCH=OFF
# UCX's memory hooks and ASan's interceptors must not both patch malloc and mmap.
(cd "$root/build-asan" && UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none \
  ctest --output-on-failure --timeout 300 -L unit)
