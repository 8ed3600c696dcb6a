#!/usr/bin/env bash
# Installs shardcomm into a temporary prefix, then configures tests/install/vars/, a
# project with UCX_*, HWLOC_* and SC_* variables of its own: find_package(shardcomm)
# must leave them as they were and define no variable of those names nor the target
# PkgConfig::UCX or PkgConfig::HWLOC (the project fails to configure, naming each one
# it finds changed). Its program linked with shardcomm::shardcomm_static, whose
# dependencies the package config looks for under private names, runs on 2 ranks.
source "$(dirname "${BASH_SOURCE[0]}")/install_prefix.sh"

configure_project vars "find_package(shardcomm) changed the caller's variables or targets"
cmake --build "$prefix/vars" >/dev/null ||
  { echo "FAIL: shardcomm::shardcomm_static does not link"; exit 1; }
"$prefix/bin/scrun" -n 2 "$prefix/vars/allreduce_overlap_static" ||
  { echo "FAIL: the program linked with shardcomm::shardcomm_static does not run"; exit 1; }
echo "config vars test: find_package(shardcomm) left the caller's variables alone"
