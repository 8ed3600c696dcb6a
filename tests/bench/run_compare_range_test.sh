#!/usr/bin/env bash
# bench/compare/run_compare.sh asks each benchmark for sizes it can run: every -b at most
# its -e, the largest -e MAXBYTES, for a MAXBYTES below the small range's end (4M), at
# it, between it and the large range's start (16M: the large range was 16M..MAXBYTES,
# refused by sc-bench) and past it. The benchmarks, scrun, mpirun and gcc (membw) are
# stand-ins that log their sizes and write JSON rows, so no MPI is needed.
# Usage: run_compare_range_test.sh RUN_COMPARE
set -uo pipefail
script=$1
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/b/tools" "$dir/b/bench" "$dir/bin"
cat > "$dir/b/bench/sc-bench" <<'STUB'
#!/bin/sh
# Logs "COLL LO HI", fails as sc-bench does on -b past -e, writes one row per size.
coll=$1 lo=8 hi=8 json=
shift
while [ $# -gt 0 ]; do
  case $1 in -b) lo=$2; shift ;; -e) hi=$2; shift ;; --json) json=$2; shift ;; esac
  shift
done
echo "$coll $lo $hi" >> "$SC_TEST_LOG"
if [ "$lo" -gt "$hi" ]; then echo "sc-bench: -b $lo is larger than -e $hi" >&2; exit 2; fi
[ "$coll" = latency ] && coll=allreduce
printf '[{"coll": "%s", "bytes": %s, "busbw": 1.0, "time_us": 1.0, "wrong": 0}]\n' \
  "$coll" "$hi" > "$json"
STUB
cp "$dir/b/bench/sc-bench" "$dir/b/bench/sc-bench-mpi"
printf '#!/bin/sh\nshift 2\nexec "$@"\n' > "$dir/b/tools/scrun"           # -n 2 PROG...
printf '#!/bin/sh\nshift 4\nexec "$@"\n' > "$dir/bin/mpirun"  # --allow.. --over.. -np 2
printf '#!/bin/sh\nexit 1\n' > "$dir/bin/gcc"
chmod +x "$dir/b/bench/"* "$dir/b/tools/scrun" "$dir/bin/"*

fails=0
# check MAXBYTES EXPECTED_RANGES: the run ends 0 and asked allreduce for exactly these
# ranges (besides the 8-byte latency), each -b at most its -e.
check() {
  export SC_TEST_LOG=$dir/$1.log
  : > "$SC_TEST_LOG"
  if ! PATH=$dir/bin:$PATH sh "$script" -B "$dir/b" "$1" > "$dir/$1.out" 2>&1; then
    echo "FAIL: $1: exit status non-zero: $(grep sc-bench "$dir/$1.out" | head -2)"
    fails=$((fails + 1))
  fi
  local got
  got=$(grep '^allreduce ' "$SC_TEST_LOG" | grep -v ' 8 8$' | sort -u | cut -d' ' -f2- |
        paste -sd, -)
  if [ "$got" != "$2" ]; then
    echo "FAIL: $1: allreduce ranges '$got', expected '$2'"
    fails=$((fails + 1))
  fi
  if awk '$2 > $3 { bad = 1 } END { exit !bad }' "$SC_TEST_LOG"; then
    echo "FAIL: $1: a range with -b past -e: $(awk '$2 > $3' "$SC_TEST_LOG" | head -1)"
    fails=$((fails + 1))
  fi
}
check 1M "65536 1048576"
check 4M "65536 4194304"
check 5M "5242880 5242880,65536 4194304"
check 8M "65536 4194304,8388608 8388608"
check 16M "16777216 16777216,65536 4194304"
check 64M "16777216 67108864,65536 4194304"
[ "$fails" = 0 ] && echo "ok: run_compare.sh's ranges"
exit $((fails > 0))
