#!/usr/bin/env bash
# A project that embeds shardcomm with add_subdirectory (tests/install/embed/), in
# WORK, with the device path CUDA (ON or OFF); one CTest test per MODE:
#   build: configures it with SC_INSTALL on, an absolute CMAKE_INSTALL_LIBDIR
#          (WORK/prefix/lib/abs) and a nested CMAKE_INSTALL_BINDIR (bin/nested), builds
#          its programs and the installed tools, and installs into WORK/prefix;
#   noinstall: configures it as it is (SC_INSTALL off by default), builds nothing, and
#          `cmake --install` installs nothing into WORK/prefix;
#   defaults: configures it as it is, but with a C++ compiler that does not exist (the
#          project and shardcomm are C, and CUDA where CUDA is ON), and builds all:
#          shardcomm's library and tools are built, and the project's programs linked
#          with them, none of shardcomm's tests, benchmarks or its tests' internal
#          library (one build for both checks: each took 20 s of CI);
#   run:   its programs, linked with shardcomm::shardcomm and shardcomm::shardcomm_static,
#          run on 2 ranks (through SCRUN);
#   tools: the installed sc-info and sc-bench run with LD_LIBRARY_PATH unset: their
#          RUNPATH leads from the nested bin directory to the absolute library directory;
#   toolsprefix: installed again with --prefix WORK/other-tools, the sc-info and sc-bench
#          there run with LD_LIBRARY_PATH unset (the library stays in the absolute
#          directory);
#   pkgconfig: a program built with `pkg-config --cflags --libs shardcomm` (the .pc file
#          in the absolute library directory) runs on 2 ranks, and after a second install
#          with --prefix WORK/other the .pc file names the headers there;
#   findpackage: installed again as configured, a program built with find_package(shardcomm)
#          from the absolute library directory (tests/install/includedir/: the package
#          names the headers of WORK/prefix) runs on 2 ranks;
#   findpackageprefix: the same, installed again with --prefix WORK/other-package, whose
#          headers the package names;
#   relativeprefix: the same, installed from WORK with the relative --prefix
#          other-relative: the package and the .pc file name WORK/other-relative/include.
# Usage: embed_test.sh SRC WORK CUDA SCRUN MODE
set -euo pipefail
src=$1 work=$2 cuda=$3 scrun=$4 mode=$5
prefix=$work/prefix
libdir=$prefix/lib/abs
bindir=$prefix/bin/nested
log=$work/$mode.log

fail() {
  [ ! -s "$log" ] || tail -n 40 "$log"
  echo "FAIL: $*"
  exit 1
}

# configure [CMAKE ARGS]: the project in a fresh WORK/build, this variant's device path.
configure() {
  rm -rf "$work"
  mkdir -p "$work"
  cmake -S "$src/tests/install/embed" -B "$work/build" -DSC_SOURCE_DIR="$src" \
    -DSC_WITH_CUDA="$cuda" "$@" >"$log" 2>&1 ||
    fail "a project that embeds shardcomm with add_subdirectory does not configure ($*)"
}

# build [--target T...]: builds the project (all of it without arguments).
build() {
  cmake --build "$work/build" -j"${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" "$@" \
    >>"$log" 2>&1 ||
    fail "a project that embeds shardcomm with add_subdirectory does not build ($*)"
}

case $mode in
build)
  configure -DSC_BUILD_BENCH=ON -DSC_INSTALL=ON -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_INSTALL_LIBDIR="$libdir" -DCMAKE_INSTALL_BINDIR=bin/nested
  build --target allreduce_overlap allreduce_overlap_static scrun sc-info sc-bench
  cmake --install "$work/build" >>"$log" 2>&1 ||
    fail "a project that embeds shardcomm does not install it"
  echo "embed test: built and installed (library in $libdir, tools in $bindir)"
  ;;
noinstall)
  configure
  cmake --install "$work/build" --prefix "$prefix" >>"$log" 2>&1 ||
    fail "a project that embeds shardcomm and did not ask to install it fails to install" \
         "(shardcomm's install rules, with nothing built)"
  installed=
  [ ! -e "$prefix" ] || installed=$(find "$prefix" -type f | head -n 5)
  [ -z "$installed" ] ||
    fail "a project that embeds shardcomm and did not ask to install it installs $installed"
  echo "embed test: without SC_INSTALL, shardcomm installs nothing with the project"
  ;;
defaults)
  configure -DCMAKE_CXX_COMPILER="$work/no-such-c++"
  build
  sc=$work/build/shardcomm
  for f in "$sc/libshardcomm.so" "$sc/libshardcomm.a" "$sc/tools/scrun" "$sc/tools/sc-info"; do
    [ -e "$f" ] || fail "building a project that embeds shardcomm did not build $f"
  done
  extra=$(find "$sc" -type f \( -name 'libshardcomm_internal.a' -o -name 'sc-bench' \
            -o -name 'test_*' -o -name 'kernels_bench' \) ! -name '*.o' ! -name '*.d' |
          head -n 5)
  [ -z "$extra" ] || fail "building a project that embeds shardcomm built $extra"
  echo "embed test: as it is, a C project that embeds shardcomm builds its library and" \
    "tools only, and links them, without a C++ compiler"
  ;;
run)
  for prog in allreduce_overlap allreduce_overlap_static; do
    "$scrun" -n 2 "$work/build/$prog" ||
      fail "$prog, built in a project that embeds shardcomm, does not run"
  done
  ;;
tools | toolsprefix)
  unset LD_LIBRARY_PATH
  if [ "$mode" = toolsprefix ]; then
    bindir=$work/other-tools/bin/nested
    rm -rf "$work/other-tools"
    cmake --install "$work/build" --prefix "$work/other-tools" >"$log" 2>&1 ||
      fail "a project that embeds shardcomm does not install it into $work/other-tools"
  fi
  [ -e "$libdir/libshardcomm.so" ] || fail "the library is not installed in $libdir"
  for tool in sc-info sc-bench; do
    runpath=$(readelf -d "$bindir/$tool" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]$/\1/p')
    echo "$tool: RUNPATH $runpath"
    args=--help
    [ "$tool" != sc-info ] || args=--version
    "$bindir/$tool" $args >/dev/null ||
      fail "the installed $tool (RUNPATH '$runpath') does not find the library in $libdir"
  done
  version=$("$bindir/sc-info" --version)
  echo "embed test: installed sc-info and sc-bench find the library: $version"
  ;;
pkgconfig)
  pc() { PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config "$@" shardcomm; }
  flags=$(pc --cflags --libs) || fail "pkg-config does not read $libdir/pkgconfig/shardcomm.pc"
  echo "pkg-config --cflags --libs shardcomm: $flags"
  cc -std=c11 "$src/examples/allreduce_overlap.c" $flags -o "$work/ex_pc" >"$log" 2>&1 ||
    fail "a program does not build with pkg-config's flags ($flags)"
  LD_LIBRARY_PATH=$libdir "$scrun" -n 2 "$work/ex_pc" ||
    fail "the program built with pkg-config's flags does not run"
  other=$work/other
  rm -rf "$other"
  cmake --install "$work/build" --prefix "$other" >"$log" 2>&1 ||
    fail "a project that embeds shardcomm does not install it into $other"
  [ "$(pc --variable=includedir)" = "$other/include" ] ||
    fail "installed with --prefix $other, the .pc file names the headers in" \
         "'$(pc --variable=includedir)'"
  [ "$(pc --variable=libdir)" = "$libdir" ] ||
    fail "the .pc file names the library directory '$(pc --variable=libdir)', not $libdir"
  echo "embed test: pkg-config finds the library in $libdir and the headers of each prefix"
  ;;
findpackage | findpackageprefix | relativeprefix)
  other=$prefix given=$prefix
  [ "$mode" != findpackageprefix ] || other=$work/other-package given=$other
  [ "$mode" != relativeprefix ] || other=$work/other-relative given=other-relative
  rm -rf "$work/includedir"
  [ "$other" = "$prefix" ] || rm -rf "$other"
  (cd "$work" && cmake --install build --prefix "$given") >"$log" 2>&1 ||
    fail "a project that embeds shardcomm does not install it into $given"
  if [ "$mode" = relativeprefix ]; then
    pc_includedir=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --variable=includedir \
                      shardcomm)
    [ "$pc_includedir" = "$other/include" ] ||
      fail "installed with --prefix $given, the .pc file names the headers in" \
           "'$pc_includedir', not $other/include"
  fi
  cmake -S "$src/tests/install/includedir" -B "$work/includedir" \
    -Dshardcomm_DIR="$libdir/cmake/shardcomm" -DSC_EXPECTED_INCLUDEDIR="$other/include" \
    -DSC_EXAMPLES_DIR="$src/examples" >"$log" 2>&1 ||
    fail "installed into $other, find_package(shardcomm) from $libdir does not configure" \
         "a project, or does not name the headers there"
  cmake --build "$work/includedir" >>"$log" 2>&1 ||
    fail "a program does not build with find_package(shardcomm) from $libdir"
  "$scrun" -n 2 "$work/includedir/allreduce_overlap" ||
    fail "the program built with find_package(shardcomm) from $libdir does not run"
  echo "embed test: find_package(shardcomm) finds the library in $libdir and the headers" \
    "in $other"
  ;;
*)
  echo "embed_test.sh: no mode '$mode' (build, noinstall, defaults, run, tools," \
    "toolsprefix, pkgconfig, findpackage, findpackageprefix or relativeprefix)" >&2
  exit 2
  ;;
esac
