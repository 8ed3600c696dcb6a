#!/usr/bin/env bash
# A project that embeds shardcomm with add_subdirectory (tests/install/embed/), in
# WORK, with the device path CUDA (ON or OFF); one CTest test per MODE:
#   build: configures it and builds its programs;
#   run:   its programs, linked with shardcomm::shardcomm and shardcomm::shardcomm_static,
#          run on 2 ranks (through SCRUN).
# Usage: embed_test.sh SRC WORK CUDA SCRUN MODE
set -euo pipefail
src=$1 work=$2 cuda=$3 scrun=$4 mode=$5
log=$work/$mode.log

fail() {
  [ ! -s "$log" ] || tail -n 40 "$log"
  echo "FAIL: $*"
  exit 1
}

case $mode in
build)
  rm -rf "$work"
  mkdir -p "$work"
  cmake -S "$src/tests/install/embed" -B "$work/build" -DSC_SOURCE_DIR="$src" \
    -DSC_WITH_CUDA="$cuda" >"$log" 2>&1 ||
    fail "a project that embeds shardcomm with add_subdirectory does not configure"
  cmake --build "$work/build" -j"${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
    --target allreduce_overlap allreduce_overlap_static >>"$log" 2>&1 ||
    fail "a project that embeds shardcomm with add_subdirectory does not build"
  echo "embed test: built"
  ;;
run)
  for prog in allreduce_overlap allreduce_overlap_static; do
    "$scrun" -n 2 "$work/build/$prog" ||
      fail "$prog, built in a project that embeds shardcomm, does not run"
  done
  ;;
*)
  echo "embed_test.sh: no mode '$mode' (build or run)" >&2
  exit 2
  ;;
esac
