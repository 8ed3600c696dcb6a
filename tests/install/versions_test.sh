#!/usr/bin/env bash
# The soname and the CMake package tell the same story of which versions a program may
# use, at versions this tree is not yet: a copy of the build files, with the version of
# api.h and project() changed to 0.2.3 and then 1.2.0, is configured (nothing built);
# its library's soname is read from the link command and its package version file is
# asked for each version of a table. While the major version is 0 a minor version is
# another ABI (libshardcomm.so.0.2: the same minor version, from the one asked for up);
# from 1 on the major version alone (libshardcomm.so.1: any 1.x from the one asked for).
# Usage: versions_test.sh SRC
set -euo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# check VERSION SONAME ACCEPTED REFUSED: the soname and the versions asked for that the
# package accepts and refuses.
check() {
  local version=$1 want=$2 accepted=$3 refused=$4 tree=$work/$1 major minor patch
  IFS=. read -r major minor patch <<<"$version"
  mkdir -p "$tree"
  cp -r "$src/CMakeLists.txt" "$src/cmake" "$src/include" "$src/src" "$src/tools" "$tree"
  sed -i "s/^project(shardcomm VERSION [0-9.]*/project(shardcomm VERSION $version/" \
    "$tree/CMakeLists.txt"
  sed -i -e "s/^#define SC_VERSION_MAJOR .*/#define SC_VERSION_MAJOR $major/" \
    -e "s/^#define SC_VERSION_MINOR .*/#define SC_VERSION_MINOR $minor/" \
    -e "s/^#define SC_VERSION_PATCH .*/#define SC_VERSION_PATCH $patch/" \
    "$tree/include/shardcomm/api.h"
  cmake -S "$tree" -B "$tree/build" -DSC_WITH_CUDA=OFF -DSC_BUILD_TESTS=OFF \
    -DSC_BUILD_BENCH=OFF >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; echo "FAIL: version $version does not configure"; exit 1; }
  local soname
  soname=$(grep -o -- '-soname,[^ ]*' "$tree/build/CMakeFiles/shardcomm.dir/link.txt" |
           sed 's/^-soname,//')
  [ "$soname" = "$want" ] ||
    { echo "FAIL: version $version has the soname '$soname', not '$want'"; exit 1; }
  local asked answer
  for asked in $accepted $refused; do
    answer=$(cmake -DASKED="$asked" -DFILE="$tree/build/shardcommConfigVersion.cmake" \
                   -P "$work/ask.cmake" 2>&1)
    if [[ " $accepted " == *" $asked "* ]]; then
      [ "$answer" = TRUE ] ||
        { echo "FAIL: version $version ($soname) refuses a program asking for $asked"; exit 1; }
    else
      [ "$answer" = FALSE ] ||
        { echo "FAIL: version $version ($soname) accepts a program asking for $asked"; exit 1; }
    fi
  done
  echo "version $version: $soname; accepts $accepted; refuses $refused"
}

# What find_package(shardcomm ASKED) makes of the package version file FILE.
cat >"$work/ask.cmake" <<'CMAKE'
set(PACKAGE_FIND_VERSION ${ASKED})
string(REPLACE "." ";" parts ${ASKED})
list(GET parts 0 PACKAGE_FIND_VERSION_MAJOR)
list(GET parts 1 PACKAGE_FIND_VERSION_MINOR)
list(GET parts 2 PACKAGE_FIND_VERSION_PATCH)
set(PACKAGE_FIND_VERSION_COUNT 3)
set(CMAKE_SIZEOF_VOID_P 8)
include(${FILE})
if(PACKAGE_VERSION_COMPATIBLE AND NOT PACKAGE_VERSION_UNSUITABLE)
  message(NOTICE TRUE)
else()
  message(NOTICE FALSE)
endif()
CMAKE

check 0.2.3 libshardcomm.so.0.2 "0.2.0 0.2.3" "0.1.0 0.2.4 0.3.0 1.0.0"
check 1.2.0 libshardcomm.so.1 "1.0.0 1.1.5 1.2.0" "0.2.0 1.2.1 1.3.0 2.0.0"
