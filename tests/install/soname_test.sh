#!/usr/bin/env bash
# The shared library's soname, and the name a program linked with it loads, carry the
# major and the minor version while the major version is 0 (a minor version may change
# the ABI: the package config accepts the same minor version only, api.h tells programs
# to compare both), the major version alone from 1 on. The version is read from api.h;
# the build tree holds the link named for the soname.
set -euo pipefail
src=$1 lib=$2 tool=$3
api=$src/include/shardcomm/api.h
major=$(sed -n 's/^#define SC_VERSION_MAJOR \([0-9][0-9]*\).*/\1/p' "$api")
minor=$(sed -n 's/^#define SC_VERSION_MINOR \([0-9][0-9]*\).*/\1/p' "$api")
if [ "$major" = 0 ]; then
  want=libshardcomm.so.$major.$minor
else
  want=libshardcomm.so.$major
fi
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
[ "$soname" = "$want" ] ||
  { echo "FAIL: $lib has the soname '$soname'; version $major.$minor wants '$want'"; exit 1; }
needed=$(readelf -d "$tool" | sed -n 's/.*(NEEDED).*\[\(libshardcomm[^]]*\)\]$/\1/p')
[ "$needed" = "$want" ] ||
  { echo "FAIL: $(basename "$tool") loads '$needed', not '$want'"; exit 1; }
[ -e "$(dirname "$lib")/$want" ] ||
  { echo "FAIL: no $want beside $lib"; exit 1; }
echo "soname test: $soname (version $major.$minor)"
