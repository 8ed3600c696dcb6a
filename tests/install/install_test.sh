#!/usr/bin/env bash
# Installs shardcomm into a temporary prefix, then builds the example the way another
# project would (find_package and pkg-config, shared and static) and runs them on 2
# ranks: allreduce_overlap, and train_data_parallel (the reducer with views and
# accumulation, then with the top-k hook: parameters bitwise equal on every rank, the
# loss falling). The installed tools run without LD_LIBRARY_PATH. (The headers:
# public_api_test.sh.)
source "$(dirname "${BASH_SOURCE[0]}")/install_prefix.sh"

# The installed tools find the library from any prefix; the library, the headers, the
# .pc file and the CMake package are one version.
version=$("$prefix/bin/sc-info" --version)
echo "installed sc-info: $version"
[[ "$version" =~ ^shardcomm\ ([0-9.]+)\ \(headers\ ([0-9.]+)\)$ ]] &&
  [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] || { echo "FAIL: versions differ"; exit 1; }
library=${BASH_REMATCH[1]}
pcdir=$(dirname "$(find "$prefix" -name shardcomm.pc | head -n 1)")
pc_version=$(PKG_CONFIG_PATH="$pcdir" pkg-config --modversion shardcomm)
cmake_version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' \
                  "$(find "$prefix" -name shardcommConfigVersion.cmake | head -n 1)")
[ "$pc_version" = "$library" ] && [ "$cmake_version" = "$library" ] ||
  { echo "FAIL: the library is $library, the .pc file says '$pc_version', the CMake" \
         "package '$cmake_version'"; exit 1; }
"$prefix/bin/scrun" -n 2 "$prefix/bin/sc-bench" allreduce -b 8 -e 1K -n 2 -w 1 -c 1 >/dev/null

# find_package(shardcomm)
cmake -S "$src/examples" -B "$prefix/ex" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/ex" >/dev/null
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$prefix/bin/scrun" -n 2 "$prefix/ex/allreduce_overlap"
"$prefix/bin/scrun" -n 2 "$prefix/ex/allreduce_overlap_static"
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$prefix/bin/scrun" -n 2 "$prefix/ex/train_data_parallel"
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$prefix/bin/scrun" -n 2 "$prefix/ex/train_data_parallel" \
  --topk 0.05

# pkg-config --cflags --libs shardcomm
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs shardcomm)
cc -std=c11 "$src/examples/allreduce_overlap.c" $flags -o "$prefix/ex_pc"
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$prefix/bin/scrun" -n 2 "$prefix/ex_pc"
# pkg-config --static: the archive and every library it needs, with every object of the
# archive linked in (the kernels' CUDA objects too), so that no dependency goes unseen.
static=$(PKG_CONFIG_PATH="$pcdir" pkg-config --static --libs shardcomm)
cc -std=c11 "$src/examples/allreduce_overlap.c" \
  $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags shardcomm) \
  -Wl,-Bstatic,--whole-archive -lshardcomm -Wl,--no-whole-archive,-Bdynamic \
  ${static//-lshardcomm/} -o "$prefix/ex_pc_static"
"$prefix/bin/scrun" -n 2 "$prefix/ex_pc_static"
# The static link README.md gives, on a toolchain that does not drop unused libraries by
# default (--no-as-needed first): `--static` alone leaves -lshardcomm to the shared
# library, so the archive is named; the program loads no libshardcomm.so.
cc -std=c11 -Wl,--no-as-needed "$src/examples/allreduce_overlap.c" \
  $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags shardcomm) -Wl,-Bstatic -lshardcomm \
  -Wl,-Bdynamic -Wl,--as-needed $static -o "$prefix/ex_pc_readme"
! readelf -d "$prefix/ex_pc_readme" | grep -q 'NEEDED.*libshardcomm' ||
  { echo "FAIL: the static link README.md gives loads libshardcomm.so"; exit 1; }
"$prefix/bin/scrun" -n 2 "$prefix/ex_pc_readme"
echo "install test: find_package and pkg-config builds ran, shared and static; static" \
  "link flags: $static"
