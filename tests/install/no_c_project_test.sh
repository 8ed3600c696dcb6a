#!/usr/bin/env bash
# Installs shardcomm into a temporary prefix, then configures tests/install/nolang/, a
# project that has enabled neither C nor C++ when it calls find_package(shardcomm) (as
# one of CUDA alone): the configure must not fail (FindThreads stops one where neither
# is enabled), and its program linked with shardcomm::shardcomm runs on 2 ranks.
source "$(dirname "${BASH_SOURCE[0]}")/install_prefix.sh"

configure_project nolang "find_package(shardcomm) fails in a project without C or C++ enabled"
cmake --build "$prefix/nolang" >/dev/null ||
  { echo "FAIL: shardcomm::shardcomm does not link in a project that enabled C after" \
         "finding it"; exit 1; }
"$prefix/bin/scrun" -n 2 "$prefix/nolang/allreduce_overlap" ||
  { echo "FAIL: the program linked with shardcomm::shardcomm does not run"; exit 1; }
echo "no-C project test: find_package(shardcomm) works before C or C++ is enabled"
