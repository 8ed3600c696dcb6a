#!/usr/bin/env bash
# Installs shardcomm into a temporary prefix and checks its public API as a program sees
# it there: each header compiles alone, first in its translation unit, as C99, C11,
# C++11 and C++17 with warnings as errors; shardcomm.h includes every other header; the
# shared library exports exactly the functions the headers declare, all named sc_*, and
# a C++ program links with each; the static library defines no global name but sc_*
# ones (and the C++ names of anonymous namespaces, which the CUDA objects have and which
# are unique to their file).
source "$(dirname "${BASH_SOURCE[0]}")/install_prefix.sh"

inc=$prefix/include
tu=$prefix/tu
lib=$(find "$prefix" -name libshardcomm.so | head -n 1)
archive=$(find "$prefix" -name libshardcomm.a | head -n 1)

for h in "$inc"/shardcomm/*.h; do
  name=$(basename "$h")
  echo "#include <shardcomm/$name>" >"$tu.c"
  cp "$tu.c" "$tu.cc"
  for std in c99 c11; do
    cc -std=$std -Wall -Wextra -pedantic -Werror -I"$inc" -c "$tu.c" -o /dev/null ||
      { echo "FAIL: $name does not compile alone ($std)"; exit 1; }
  done
  for std in c++11 c++17; do
    c++ -std=$std -Wall -Wextra -pedantic -Werror -I"$inc" -c "$tu.cc" -o /dev/null ||
      { echo "FAIL: $name does not compile alone ($std)"; exit 1; }
  done
done

# The files the preprocessor reads for shardcomm.h, one a line.
echo '#include <shardcomm/shardcomm.h>' >"$tu.c"
read=$(cc -I"$inc" -M "$tu.c" | tr ' \\' '\n\n')
for h in "$inc"/shardcomm/*.h; do
  grep -qxF "$h" <<<"$read" ||
    { echo "FAIL: shardcomm.h does not include shardcomm/$(basename "$h")"; exit 1; }
done

# Every function the headers declare, from gcc's list of the prototypes it read and
# where (-aux-info), against what the shared library exports.
gcc -std=c11 -I"$inc" -aux-info "$prefix/prototypes" -c "$tu.c" -o /dev/null
declared=$({ grep -F "/* $inc/shardcomm/" "$prefix/prototypes" || true; } |
           sed -n 's/^[^*]*\*[^*]*\*\/ extern [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\) (.*/\1/p' |
           sort -u)
exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u)
[ -n "$declared" ] || { echo "FAIL: no function declared in $inc/shardcomm"; exit 1; }
unnamed=$(grep -v '^sc_' <<<"$declared" || true)
[ -z "$unnamed" ] || { echo "FAIL: the headers declare functions not named sc_*:" $unnamed; exit 1; }
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
[ -z "$missing" ] ||
  { echo "FAIL: declared in the headers, not exported by $lib:" $missing; exit 1; }
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
[ -z "$extra" ] ||
  { echo "FAIL: exported by $lib, declared in no public header:" $extra; exit 1; }

# A C++ program that takes the address of each of them links with the shared library
# (every header's extern "C").
{
  echo '#include <shardcomm/shardcomm.h>'
  echo 'typedef void (*fn_t)(void);'
  echo 'fn_t fns[] = {'
  sed 's/.*/  reinterpret_cast<fn_t>(\&&),/' <<<"$declared"
  echo '};'
  echo 'int main() { return fns[0] == 0; }'
} >"$prefix/every.cc"
c++ -std=c++11 -I"$inc" "$prefix/every.cc" "$lib" -o "$prefix/every" ||
  { echo "FAIL: a C++ program that uses every function does not link (above)"; exit 1; }

others=$(nm -g --defined-only "$archive" |
         awk 'NF == 3 && $2 ~ /^[TDBRCG]$/ && $3 !~ /^sc_/ && $3 !~ /_GLOBAL__N_/ {print $3}' |
         sort -u)
[ -z "$others" ] ||
  { echo "FAIL: $archive defines global names outside sc_*:" $others; exit 1; }
echo "public API test: every header compiles alone and is in shardcomm.h;" \
  "$(wc -l <<<"$declared") functions declared, the same exported"
