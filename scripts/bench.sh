#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs sc-bench allreduce with local
# ranks on the host backend. Arguments go to sc-bench (default: allreduce 8 B - 64 MiB).
# NP sets the number of ranks (default 2); BUILD_DIR the build directory (default build/,
# as scripts/build.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(allreduce -b 8 -e 64M -f 4 -n 20 -w 5 -c 1)
exec "$build/tools/scrun" -n "${NP:-2}" "$build/bench/sc-bench" "${args[@]}"
