#!/usr/bin/env bash
# Installs shardcomm into a temporary prefix, then builds the example the way another
# project would (find_package and pkg-config) and runs them on 2 ranks: allreduce_overlap,
# and train_data_parallel (the reducer with views and accumulation, then with the top-k
# hook: parameters bitwise equal on every rank, the loss falling).
set -euo pipefail
src=$1 build=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null

# find_package(shardcomm)
cmake -S "$src/examples" -B "$prefix/ex" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/ex" >/dev/null
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$prefix/bin/scrun" -n 2 "$prefix/ex/allreduce_overlap"
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$prefix/bin/scrun" -n 2 "$prefix/ex/train_data_parallel"
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$prefix/bin/scrun" -n 2 "$prefix/ex/train_data_parallel" \
  --topk 0.05

# pkg-config --cflags --libs shardcomm
pcdir=$(dirname "$(find "$prefix" -name shardcomm.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs shardcomm)
cc -std=c11 "$src/examples/allreduce_overlap.c" $flags -o "$prefix/ex_pc"
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$prefix/bin/scrun" -n 2 "$prefix/ex_pc"
static=$(PKG_CONFIG_PATH="$pcdir" pkg-config --static --libs shardcomm)
echo "install test: find_package and pkg-config builds ran; static link flags: $static"
