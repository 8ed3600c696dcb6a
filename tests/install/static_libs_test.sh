#!/usr/bin/env bash
# Installs shardcomm into a temporary prefix; the .pc file's own Libs.private names every
# plain library (m, dl, stdc++: not a target, a path or a flag) that the installed CMake
# package's shardcomm::shardcomm_static links, so that a static link through pkg-config
# does not count on UCX's or hwloc's .pc files for a library shardcomm itself calls.
source "$(dirname "${BASH_SOURCE[0]}")/install_prefix.sh"

pc=$(find "$prefix" -name shardcomm.pc | head -n 1)
targets=$(find "$prefix" -name shardcommTargets.cmake | head -n 1)
private=" $(sed -n 's/^Libs.private: *//p' "$pc") "
libs=$(sed -n '/^add_library(shardcomm::shardcomm_static /,/^)/{
                s/^ *INTERFACE_LINK_LIBRARIES "\(.*\)"$/\1/p
              }' "$targets")
[ -n "$libs" ] ||
  { echo "FAIL: no INTERFACE_LINK_LIBRARIES of the static target in $targets"; exit 1; }
IFS=';' read -r -a items <<<"$libs"
for lib in "${items[@]}"; do
  case $lib in *::* | /* | -* | '$<'*) continue ;; esac
  [[ "$private" == *" -l$lib "* ]] ||
    { echo "FAIL: shardcomm::shardcomm_static links $lib; the .pc file's Libs.private" \
           "($private) does not"; exit 1; }
done
echo "static libs test: the static target links '$libs'; Libs.private:$private"
