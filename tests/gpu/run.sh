#!/usr/bin/env bash
# GPU validation of shardcomm, for a machine with a GPU: configures BUILD_DIR
# (build-gpu) with the device path, builds it, runs the gpu-labelled and the unit
# tests, sc-bench --device for every collective (1 rank on NCCL up to 256 MiB, 2 and
# 4 ranks host-staged up to 64 MiB), sc-bench kernels --device and sc-bench topk
# --device (and torch.topk on the same GPU where python3 has torch with CUDA). Every log
# and JSON file goes under $OUT (default BUILD_DIR/gpu-results); a summary table is
# printed last; the exit status is non-zero when a check failed. See tests/gpu/README.md.
#
# Environment:
#   OUT, BUILD_DIR         see above
#   SC_GPU_STEPS           steps to run (default: deps build gpu-tests unit-tests bench
#                          kernels topk); the later steps need a build
#   PYTHON                 the python3 with numpy and torch for the topk comparison
#                          (default python3)
#   SC_GPU_FORCE_DEPS=1    use the .deb fallback for UCX and hwloc even where
#                          pkg-config finds them (to test the fallback)
#   SC_GPU_FORCE_RUNTIME=1 with it, take the UCX, libnuma and hwloc runtimes from the
#                          .debs too, even where they are installed
#   SC_GPU_BUDGET_S        seconds the whole run may take (default: no limit): every
#                          step's time limit is cut to what is left, less 20 s for the
#                          summary, and a step with nothing left is skipped, so that
#                          the summary comes out before a lease ends
#   SC_GPU_ARCHIVE         a .tar.gz file that receives every log and result at the end
#                          (one file, for a machine that hands back only a few)
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-gpu}
mkdir -p "$build" && build=$(cd "$build" && pwd)
out=${OUT:-$build/gpu-results}
mkdir -p "$out" && out=$(cd "$out" && pwd)
steps=" ${SC_GPU_STEPS:-deps build gpu-tests unit-tests bench kernels topk} "
jobs=$(nproc 2>/dev/null || echo 4)
debs=$root/.gpu-deps
prefix=$build/gpu-deps # private prefix of the .deb fallback; never /
t_start=$(date +%s)
budget=${SC_GPU_BUDGET_S:-0}

# ---- results -----------------------------------------------------------------------

check_names=()
check_results=() # PASS, FAIL or SKIP
check_notes=()
failed=0
cut=0 # checks not run because SC_GPU_BUDGET_S was spent

record() { # NAME RESULT NOTE
  check_names+=("$1")
  check_results+=("$2")
  check_notes+=("$3")
  [ "$2" = FAIL ] && failed=$((failed + 1))
  printf 'run.sh: %-40s %s %s\n' "$1" "$2" "$3"
}

want() { case "$steps" in *" $1 "*) return 0 ;; esac; return 1; }

# Seconds SC_GPU_BUDGET_S leaves, less 20 s for the summary (may be 0 or less).
seconds_left() { echo $((t_start + budget - 20 - $(date +%s))); }

# A step's time limit: $1 seconds, cut to what SC_GPU_BUDGET_S leaves; at least 1
# (timeout 0 would mean no limit at all).
limit() {
  local left
  if [ "$budget" -le 0 ]; then
    echo "$1"
    return
  fi
  left=$(seconds_left)
  if [ "$left" -lt 1 ]; then
    echo 1
  elif [ "$left" -lt "$1" ]; then
    echo "$left"
  else
    echo "$1"
  fi
}

# Records NAME as skipped and fails when SC_GPU_BUDGET_S is spent.
budget_left() {
  if [ "$budget" -le 0 ] || [ "$(seconds_left)" -ge 1 ]; then
    return 0
  fi
  record "$1" SKIP "not run: SC_GPU_BUDGET_S=$budget is spent"
  cut=$((cut + 1))
  return 1
}

# ---- deps: UCX and hwloc development files -----------------------------------------

# Path of the installed shared library with soname $1 (e.g. libucp.so.0).
find_soname() {
  local p d
  p=$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null |
      awk -v n="$1" '$1 == n && /x86-64/ { print $NF; exit }')
  if [ -z "$p" ]; then
    for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /usr/lib \
             /usr/local/lib; do
      [ -e "$d/$1" ] && { p=$d/$1; break; }
    done
  fi
  [ -n "$p" ] && printf '%s\n' "$p"
}

# Extracts the .deb matching $1 (e.g. libucx-dev) from .gpu-deps into $2; prints its
# upstream version.
extract_deb() {
  local deb="" f
  for f in "$debs/$1"_*_amd64.deb; do
    [ -e "$f" ] && deb=$f
  done
  if [ -z "$deb" ]; then
    echo "run.sh: no $1 .deb in $debs (tests/gpu/fetch-deps.sh downloads it)" >&2
    return 1
  fi
  rm -rf "$2" && mkdir -p "$2" && dpkg-deb -x "$deb" "$2" || return 1
  dpkg-deb -f "$deb" Version | sed 's/-[^-]*$//'
}

add_pkg_config_path() {
  PKG_CONFIG_PATH=$1${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export PKG_CONFIG_PATH
}

# Makes the shared library with soname $1 loadable: the installed one where there is
# one, else the one in the .deb $2 (e.g. libucx0), extracted into $prefix/runtime,
# whose library directory goes first in LD_LIBRARY_PATH (the build, the tests and the
# benchmarks inherit it). Sets rt_path to the library's path. (Not to be called in a
# command substitution: LD_LIBRARY_PATH would stay in the subshell.)
rt_path=""
runtime_soname() {
  local rt=$prefix/runtime libdir
  libdir=$rt/$2/usr/lib/x86_64-linux-gnu
  if [ "${SC_GPU_FORCE_RUNTIME:-0}" != 1 ] && rt_path=$(find_soname "$1"); then
    return 0
  fi
  if [ ! -e "$libdir/$1" ]; then
    extract_deb "$2" "$rt/$2" > /dev/null || return 1
  fi
  [ -e "$libdir/$1" ] || { echo "run.sh: $2's .deb holds no $1" >&2; return 1; }
  case ":${LD_LIBRARY_PATH:-}:" in
    *":$libdir:"*) ;;
    *) export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
  esac
  echo "run.sh: $1 from $2's .deb (not installed here)" >&2
  rt_path=$libdir/$1
}

# pkg-config itself, from the pkgconf .debs where the machine has none.
deps_pkg_config() {
  local bin=$prefix/runtime/bin
  command -v pkg-config > /dev/null && return 0
  runtime_soname libpkgconf.so.3 libpkgconf3 || return 1
  extract_deb pkgconf-bin "$prefix/runtime/pkgconf-bin" > /dev/null || return 1
  mkdir -p "$bin"
  ln -sfn "$prefix/runtime/pkgconf-bin/usr/bin/pkgconf" "$bin/pkg-config"
  export PATH=$bin:$PATH
  echo "run.sh: pkg-config from the pkgconf .debs (not installed here)" >&2
  command -v pkg-config > /dev/null
}

# UCX: headers from libucx-dev, libraries of the installed runtime (libucp.so.0 ...),
# or of libucx0's .deb where none is installed, through libucp.so symlinks, and ucx.pc
# (with the ucx-uct.pc and ucx-ucs.pc it requires) written for them. Sets deps_note.
deps_ucx() {
  local dir=$prefix/ucx version lib so
  if [ "${SC_GPU_FORCE_DEPS:-0}" != 1 ] && pkg-config --exists ucx; then
    deps_note="ucx $(pkg-config --modversion ucx) (pkg-config)"
    return 0
  fi
  version=$(extract_deb libucx-dev "$dir/root") || return 1
  mkdir -p "$dir/lib/pkgconfig"
  runtime_soname libnuma.so.1 libnuma1 || return 1
  for lib in ucp uct ucs ucm; do
    if ! runtime_soname "lib$lib.so.0" libucx0; then
      echo "run.sh: lib$lib.so.0 (the UCX runtime) is neither installed nor in .gpu-deps" >&2
      return 1
    fi
    so=$rt_path
    ln -sfn "$so" "$dir/lib/lib$lib.so"
  done
  write_pc "$dir/lib/pkgconfig/ucx.pc" ucx "$version" "$dir/root/usr/include" "$dir/lib" \
    "-lucp" "ucx-uct, ucx-ucs"
  write_pc "$dir/lib/pkgconfig/ucx-uct.pc" ucx-uct "$version" "$dir/root/usr/include" \
    "$dir/lib" "-luct" "ucx-ucs"
  write_pc "$dir/lib/pkgconfig/ucx-ucs.pc" ucx-ucs "$version" "$dir/root/usr/include" \
    "$dir/lib" "-lucs -lucm" ""
  add_pkg_config_path "$dir/lib/pkgconfig"
  pkg-config --exists ucx || return 1
  deps_note="ucx: headers $version from .gpu-deps, libraries in $(dirname "$so")"
}

# hwloc: the system's headers where they exist, else those of libhwloc-dev; the
# installed libhwloc.so.15 through a libhwloc.so symlink; hwloc.pc written for them.
# Sets deps_note.
deps_hwloc() {
  local dir=$prefix/hwloc version=2 cflags so
  if [ "${SC_GPU_FORCE_DEPS:-0}" != 1 ] && pkg-config --exists hwloc; then
    deps_note="hwloc $(pkg-config --modversion hwloc) (pkg-config)"
    return 0
  fi
  if ! runtime_soname libhwloc.so.15 libhwloc15; then
    echo "run.sh: libhwloc.so.15 (the hwloc runtime) is neither installed nor in .gpu-deps" >&2
    return 1
  fi
  so=$rt_path
  mkdir -p "$dir/lib/pkgconfig"
  ln -sfn "$so" "$dir/lib/libhwloc.so"
  if [ "${SC_GPU_FORCE_DEPS:-0}" != 1 ] && [ -e /usr/include/hwloc.h ]; then
    cflags="-I/usr/include"
  else
    version=$(extract_deb libhwloc-dev "$dir/root") || return 1
    cflags="-I$dir/root/usr/include -I$dir/root/usr/include/x86_64-linux-gnu"
  fi
  {
    echo "Name: hwloc"
    echo "Description: hwloc for shardcomm's GPU run (tests/gpu/run.sh)"
    echo "Version: $version"
    echo "Cflags: $cflags"
    echo "Libs: -L$dir/lib -lhwloc"
  } > "$dir/lib/pkgconfig/hwloc.pc"
  add_pkg_config_path "$dir/lib/pkgconfig"
  pkg-config --exists hwloc || return 1
  deps_note="hwloc: headers ${cflags%% *} ($version), library $so"
}

# write_pc FILE NAME VERSION INCLUDEDIR LIBDIR LIBS REQUIRES
write_pc() {
  {
    echo "includedir=$4"
    echo "libdir=$5"
    echo "Name: $2"
    echo "Description: $2 for shardcomm's GPU run (tests/gpu/run.sh)"
    echo "Version: $3"
    echo "Cflags: -I\${includedir}"
    echo "Libs: -L\${libdir} $6"
    [ -n "$7" ] && echo "Requires: $7"
  } > "$1"
}

deps_note=""

step_deps() {
  local note_ucx
  if ! deps_pkg_config 2>> "$out/deps.log"; then
    record deps FAIL "pkg-config is neither installed nor in .gpu-deps: see $out/deps.log"
    return 1
  fi
  if ! deps_ucx 2>> "$out/deps.log"; then
    record deps FAIL "UCX development files: see $out/deps.log"
    return 1
  fi
  note_ucx=$deps_note
  if ! deps_hwloc 2>> "$out/deps.log"; then
    record deps FAIL "hwloc development files: see $out/deps.log"
    return 1
  fi
  printf '%s\n%s\nPKG_CONFIG_PATH=%s\nLD_LIBRARY_PATH=%s\n' "$note_ucx" "$deps_note" \
    "${PKG_CONFIG_PATH:-}" "${LD_LIBRARY_PATH:-}" >> "$out/deps.log"
  record deps PASS "$note_ucx; $deps_note"
}

# ---- build -------------------------------------------------------------------------

step_build() {
  local t0=$SECONDS warnings
  if ! cmake -S "$root" -B "$build" -DSC_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
       > "$out/configure.log" 2>&1; then
    record configure FAIL "see $out/configure.log"
    return 1
  fi
  record configure PASS "$(grep -o 'shardcomm device path: .*' "$out/configure.log" | head -n 1)"
  budget_left build || return 1
  local lim rc
  lim=$(limit 1800)
  timeout "$lim" cmake --build "$build" -j"$jobs" > "$out/build.log" 2>&1
  rc=$?
  if [ $rc = 124 ]; then
    record build FAIL "timed out after $lim s: see $out/build.log"
    return 1
  elif [ $rc != 0 ]; then
    record build FAIL "see $out/build.log"
    return 1
  fi
  warnings=$(grep -c 'warning:' "$out/build.log")
  record build PASS "$((SECONDS - t0)) s, $warnings warning lines"
}

# ---- tests -------------------------------------------------------------------------

# One row per test of a ctest log: NAME RESULT SECONDS.
ctest_rows() {
  awk '/Test +#[0-9]+: / {
         name = ""; for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) { name = $(i + 1); break }
         result = "FAIL"
         if ($0 ~ /Passed/) result = "PASS"
         else if ($0 ~ /Skipped/) result = "SKIP"
         secs = ""; for (i = NF; i > 0; i--) if ($i == "sec") { secs = $(i - 1); break }
         print name, result, secs
       }' "$1"
}

step_gpu_tests() {
  local log=$out/ctest-gpu.log name result secs rc before=$failed n=0
  budget_left "gpu tests" || return
  # SC_BIND=none: concurrent scrun runs would otherwise pin their ranks to the same cores.
  (cd "$build" && SC_BIND=none timeout "$(limit 1500)" ctest -L gpu -j4 --output-on-failure \
     --output-junit "$out/ctest-gpu.xml") > "$log" 2>&1
  rc=$?
  while read -r name result secs; do
    record "$name" "$result" "${secs:+$secs s}"
    n=$((n + 1))
  done < <(ctest_rows "$log")
  if [ "$n" = 0 ]; then
    record "gpu tests" FAIL "no test ran: see $log"
  elif [ "$rc" != 0 ] && [ "$failed" = "$before" ]; then
    record "gpu tests" FAIL "ctest exited with status $rc: see $log"
  fi
}

step_unit_tests() {
  local log=$out/ctest-unit.log rows passed skipped total
  budget_left "unit tests" || return
  (cd "$build" && timeout "$(limit 900)" ctest -L unit -j"$jobs" --output-on-failure \
     --output-junit "$out/ctest-unit.xml") > "$log" 2>&1
  rows=$(ctest_rows "$log")
  total=$(printf '%s\n' "$rows" | grep -c .)
  passed=$(printf '%s\n' "$rows" | grep -c ' PASS')
  skipped=$(printf '%s\n' "$rows" | grep -c ' SKIP')
  if [ "$total" -gt 0 ] && [ $((passed + skipped)) = "$total" ]; then
    record "unit tests" PASS "$passed passed, $skipped skipped"
  else
    record "unit tests" FAIL "$passed of $total passed: $(printf '%s\n' "$rows" |
      awk '$2 == "FAIL" { printf "%s ", $1 }')(see $log)"
  fi
}

# ---- benchmarks --------------------------------------------------------------------

# bench_run NAME NP NCCL(0|default) ARGS...: sc-bench --device for every collective.
bench_run() {
  local name=$1 np=$2 nccl=$3 rc lim
  shift 3
  budget_left "$name" || return
  lim=$(limit 600)
  (
    if [ "$nccl" = 0 ]; then export SC_NCCL=0; else unset SC_NCCL; fi
    SC_TIMEOUT=60 timeout "$lim" "$build/tools/scrun" -n "$np" "$build/bench/sc-bench" all \
      "$@" --device --json "$out/$name.json"
  ) > "$out/$name.log" 2>&1
  rc=$?
  if [ $rc = 0 ]; then
    record "$name" PASS "$(grep -o 'avg busbw: .*' "$out/$name.log" | tail -n 1)"
  elif [ $rc = 124 ]; then
    record "$name" FAIL "timed out after $lim s (see $out/$name.log)"
  else
    record "$name" FAIL "exit status $rc: $(grep -m 1 -E 'sc-bench|scrun|wrong: [1-9]' \
      "$out/$name.log" | cut -c 1-160)"
  fi
}

step_bench() {
  bench_run bench-nccl-np1 1 default -b 8 -e 256M
  bench_run bench-nccl-np1-inplace 1 default -b 8 -e 256M --inplace
  bench_run bench-staged-np2 2 0 -b 8 -e 64M
  bench_run bench-staged-np2-inplace 2 0 -b 8 -e 64M --inplace
  bench_run bench-staged-np4 4 0 -b 8 -e 64M
}

step_kernels() {
  local log=$out/kernels.log rc
  budget_left kernels || return
  timeout "$(limit 600)" "$build/bench/sc-bench" kernels --device --json "$out/kernels.json" \
    > "$log" 2>&1
  rc=$?
  if grep -q "unknown collective 'kernels'" "$log"; then
    record kernels SKIP "sc-bench kernels is not in this build yet: nothing measured"
  elif [ $rc = 0 ]; then
    record kernels PASS "see $log"
  else
    record kernels FAIL "exit status $rc: $(grep -m 1 . "$log" | cut -c 1-160)"
  fi
}

# step_topk: the CUDA top-k selection, 25 M float32 at k = 1%, exact mode (the selection
# is checked against the input by sc-bench); then torch.topk on the same GPU and array
# through bench/compare, whose index sets must agree (target: shardcomm 3x faster).
step_topk() {
  local log=$out/topk.log cmp=$out/topk-vs-torch.log py=${PYTHON:-python3} rc
  budget_left "topk --device" || return
  timeout "$(limit 600)" "$build/bench/sc-bench" topk --device -n 25M --ratio 0.01 --mode exact \
    --iters 20 --json "$out/topk.json" > "$log" 2>&1
  rc=$?
  if [ $rc = 0 ]; then
    record "topk --device" PASS "$(awk '$1 == "exact" { printf "median %s ms, %s GB/s", $4, $5 }' "$log")"
  else
    record "topk --device" FAIL "exit status $rc: $(grep -m 1 -E 'sc-bench|wrong|FAIL' "$log" |
      cut -c 1-160)"
  fi
  if ! "$py" -c 'import sys, numpy, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
       > /dev/null 2>&1; then
    record "topk vs torch.topk" SKIP "$py has no numpy, torch or CUDA: nothing compared"
    return
  fi
  budget_left "topk vs torch.topk" || return
  timeout "$(limit 900)" "$py" "$root/bench/compare/topk_vs_numpy_torch.py" -B "$build" --device \
    --iters 20 --json "$out/topk-vs-torch.json" > "$cmp" 2>&1
  rc=$?
  if [ $rc = 0 ]; then
    record "topk vs torch.topk" PASS "$(awk '/^  torch.topk/ { printf "torch / shardcomm %sx", $NF }' "$cmp")"
  else
    record "topk vs torch.topk" FAIL "exit status $rc: $(grep -m 1 -E 'DIFFER|failed|needs' \
      "$cmp" | cut -c 1-160) (see $cmp)"
  fi
}

# ---- summary -----------------------------------------------------------------------

# Peak algbw and busbw per collective of a bench log: COLL ALGBW BUSBW.
bench_peaks() {
  [ -f "$1" ] || return 0
  sed 's/^\[[0-9]*\] //' "$1" | awk '
    $1 !~ /^#/ && NF == 10 && $2 ~ /^[0-9]+$/ {
      if (!($1 in alg)) { order[n++] = $1; alg[$1] = 0; bus[$1] = 0 }
      if ($8 > alg[$1]) alg[$1] = $8
      if ($9 > bus[$1]) bus[$1] = $9
    }
    END { for (i = 0; i < n; i++) print order[i], alg[order[i]], bus[order[i]] }'
}

peak_of() { # LOG COLL FIELD(2 algbw, 3 busbw)
  bench_peaks "$1" | awk -v c="$2" -v f="$3" '$1 == c { print $f; found = 1 }
                                            END { if (!found) print "-" }'
}

print_summary() {
  local i gpu rows
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null |
        head -n 1)
  echo
  echo "==== shardcomm GPU run: ${gpu:-no nvidia-smi}; $(grep -o 'CUDA [A-Z]*, NCCL [A-Z]*' \
    "$out/configure.log" 2>/dev/null | head -n 1); $(( $(date +%s) - t_start )) s ===="
  printf '%-44s %-5s %s\n' check result note
  for i in "${!check_names[@]}"; do
    printf '%-44s %-5s %s\n' "${check_names[$i]}" "${check_results[$i]}" "${check_notes[$i]}"
  done
  if want bench && [ -n "$(bench_peaks "$out/bench-nccl-np1.log")$(bench_peaks \
       "$out/bench-staged-np2.log")$(bench_peaks "$out/bench-staged-np4.log")" ]; then
    echo
    echo "peak bandwidth, GB/s (out of place; 1 rank: busbw is 0 by definition where the"
    echo "collective moves nothing between ranks, so algbw is shown too)"
    printf '%-16s %14s %14s %16s %16s\n' collective "np1 NCCL alg" "np1 NCCL bus" \
      "np2 staged bus" "np4 staged bus"
    for c in allreduce reduce_scatter allgather broadcast reduce alltoall; do
      printf '%-16s %14s %14s %16s %16s\n' "$c" \
        "$(peak_of "$out/bench-nccl-np1.log" "$c" 2)" \
        "$(peak_of "$out/bench-nccl-np1.log" "$c" 3)" \
        "$(peak_of "$out/bench-staged-np2.log" "$c" 3)" \
        "$(peak_of "$out/bench-staged-np4.log" "$c" 3)"
    done
  fi
  # Kernel rows: label words, then bytes, time (us), GB/s, copy GB/s, ratio.
  rows=$(awk '$1 !~ /^#/ && NF >= 6 && $(NF - 4) ~ /^[0-9]+$/ {
                label = $1; for (i = 2; i <= NF - 5; i++) label = label " " $i
                printf "%-36s %10.1f %16.1f\n", label, $(NF - 2), 100 * $NF
              }' "$out/kernels.log" 2>/dev/null)
  want kernels || rows=""
  if [ -n "$rows" ]; then
    echo
    echo "kernels (sc-bench kernels --device):"
    printf '%-36s %10s %16s\n' kernel GB/s "% of D2D copy"
    printf '%s\n' "$rows"
  fi
  echo
  echo "logs and JSON: $out"
  if [ "$failed" = 0 ] && [ "$cut" != 0 ]; then
    echo "RESULT: INCOMPLETE ($cut checks not run: SC_GPU_BUDGET_S=$budget was spent)"
  elif [ "$failed" = 0 ]; then
    echo "RESULT: PASS"
  else
    echo "RESULT: FAIL ($failed checks failed)"
  fi
}

# ---- main --------------------------------------------------------------------------

echo "run.sh: build $build, results $out, steps:$steps"
{ nvidia-smi 2>&1 || echo "nvidia-smi: not available"; } > "$out/nvidia-smi.log"
built=1
if want deps && ! step_deps; then
  built=0
fi
if want build; then
  if [ $built = 0 ]; then
    record build SKIP "not run: the deps step failed"
  elif ! step_build; then
    built=0
  fi
fi
if [ $built = 1 ] && [ ! -x "$build/bench/sc-bench" ] &&
   { want gpu-tests || want unit-tests || want bench || want kernels || want topk; }; then
  record build FAIL "no build in $build (run the build step)"
  built=0
fi
for s in gpu-tests unit-tests bench kernels topk; do
  want "$s" || continue
  if [ $built = 0 ]; then
    record "$s" SKIP "not run: no build"
    continue
  fi
  case $s in
    gpu-tests) step_gpu_tests ;;
    unit-tests) step_unit_tests ;;
    bench) step_bench ;;
    kernels) step_kernels ;;
    topk) step_topk ;;
  esac
done
print_summary | tee "$out/summary.txt"
if [ -n "${SC_GPU_ARCHIVE:-}" ]; then
  tar czf "$SC_GPU_ARCHIVE" -C "$(dirname "$out")" "$(basename "$out")" ||
    echo "run.sh: could not write $SC_GPU_ARCHIVE" >&2
fi
[ "$failed" = 0 ] && [ "$cut" = 0 ]
