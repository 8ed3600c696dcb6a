#!/usr/bin/env bash
# Installs shardcomm into a temporary prefix and moves the installed tree one level down,
# so that nothing is left where it was installed; from there, as README.md promises of
# an install anywhere: the installed sc-info runs without LD_LIBRARY_PATH (its RUNPATH
# is relative), find_package(shardcomm) builds the examples with the shared and the
# static library and pkg-config builds one with its flags (the package config and the
# .pc file find their prefix from where they are), and each program runs on 2 ranks;
# sc-bench reducer finds the installed profiles by name.
source "$(dirname "${BASH_SOURCE[0]}")/install_prefix.sh"

moved=$prefix/moved
mkdir "$moved"
for d in "$prefix"/*; do
  [ "$d" = "$moved" ] || mv "$d" "$moved/"
done

"$moved/bin/sc-info" --version ||
  { echo "FAIL: the moved sc-info does not find the library"; exit 1; }

cmake -S "$src/examples" -B "$prefix/ex" -DCMAKE_PREFIX_PATH="$moved" >"$prefix/ex.log" 2>&1 &&
  cmake --build "$prefix/ex" --target allreduce_overlap allreduce_overlap_static \
    >>"$prefix/ex.log" 2>&1 ||
  { cat "$prefix/ex.log"; echo "FAIL: find_package(shardcomm) from the moved prefix"; exit 1; }
for prog in allreduce_overlap allreduce_overlap_static; do
  "$moved/bin/scrun" -n 2 "$prefix/ex/$prog" ||
    { echo "FAIL: $prog, built against the moved prefix, does not run"; exit 1; }
done

pcdir=$(dirname "$(find "$moved" -name shardcomm.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs shardcomm)
cc -std=c11 "$src/examples/allreduce_overlap.c" $flags -o "$prefix/ex_pc" ||
  { echo "FAIL: no program builds with pkg-config's flags ($flags) from the moved prefix"
    exit 1; }
LD_LIBRARY_PATH="$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=libdir shardcomm)" \
  "$moved/bin/scrun" -n 2 "$prefix/ex_pc" ||
  { echo "FAIL: the program built with pkg-config's flags ($flags) does not run"; exit 1; }
# sc-bench reducer --profile NAME finds the profiles installed beside it, moved with it:
# those given, and one that only the moved prefix holds (the source tree's bench/profiles,
# its other place to look, has no such name).
for name in resnet50 bert_base gpt2_124m gpt_1p3b; do
  [ -f "$moved/share/shardcomm/profiles/$name.txt" ] ||
    { echo "FAIL: the profile $name is not installed in share/shardcomm/profiles"; exit 1; }
done
cp "$src/tests/bench/reducer_small.txt" "$moved/share/shardcomm/profiles/only_installed.txt"
(cd "$prefix" && "$moved/bin/scrun" -n 2 "$moved/bin/sc-bench" reducer --profile only_installed \
   --iters 1 >"$prefix/profile.log" 2>&1) ||
  { cat "$prefix/profile.log"; echo "FAIL: the moved sc-bench does not find its installed profiles"; exit 1; }
echo "relocated prefix test: the install works from $moved"
