#!/bin/sh
# Side by side, in one run on one machine: shardcomm (sc-bench through scrun; with plain
# buffers, then with registered ones, -R 1) and
# Open MPI (sc-bench-mpi through mpirun), 2 ranks, float32 sum, busbw of allreduce,
# reduce_scatter, allgather and sendrecv (MPI_Sendrecv) over 64K..MAXBYTES, 8-byte
# allreduce latency, and the
# memory bandwidth ceiling (membw.c from the shared peers).
#
# usage: run_compare.sh [-B BUILD_DIR] [MAXBYTES]
#   BUILD_DIR: a configured and built tree (default $SC_BUILD_DIR, else <repo>/build);
#   MAXBYTES:  largest size, K/M/G suffixes (default 256M).
# Builds nothing of shardcomm; only membw is compiled, into a temporary directory.
set -eu

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${SC_BUILD_DIR:-$repo/build}
if [ "${1:-}" = "-B" ]; then
    build=$2
    shift 2
fi
maxbytes=${1:-256M}

scrun=$build/tools/scrun
scbench=$build/bench/sc-bench
mpibench=$build/bench/sc-bench-mpi
for f in "$scrun" "$scbench" "$mpibench"; do
    if [ ! -x "$f" ]; then
        echo "run_compare.sh: $f not found: build $build first (sc-bench-mpi needs MPI" \
             "found at configure time)" >&2
        exit 1
    fi
done
membw_src=/work/shared/peers/membw.c
[ -f "$membw_src" ] || membw_src=$repo/../shared/peers/membw.c

# Bytes of a size with an optional binary suffix.
to_bytes() {
    case $1 in
    *[Kk]) echo $(( ${1%?} << 10 )) ;;
    *[Mm]) echo $(( ${1%?} << 20 )) ;;
    *[Gg]) echo $(( ${1%?} << 30 )) ;;
    *) echo $(( $1 )) ;;
    esac
}
max=$(to_bytes "$maxbytes")
split=$((4 << 20))

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

mpirun="mpirun --allow-run-as-root --oversubscribe -np 2"
colls="allreduce reduce_scatter allgather sendrecv"

# Small sizes need many iterations to time; large ones few to finish in minutes.
run_range() { # name lo hi iters warmup
    for c in $colls; do
        echo "== shardcomm $c $2..$3" >&2
        "$scrun" -n 2 "$scbench" "$c" -b "$2" -e "$3" -f 4 -n "$4" -w "$5" -c 1 \
            -d float32 -o sum --json "$tmp/sc_${c}_$1.json" >"$tmp/sc_${c}_$1.txt"
        echo "== shardcomm $c $2..$3, registered buffers (-R 1)" >&2
        "$scrun" -n 2 "$scbench" "$c" -b "$2" -e "$3" -f 4 -n "$4" -w "$5" -c 1 \
            -d float32 -o sum -R 1 --json "$tmp/reg_${c}_$1.json" >"$tmp/reg_${c}_$1.txt"
        echo "== Open MPI $c $2..$3" >&2
        $mpirun "$mpibench" "$c" -b "$2" -e "$3" -f 4 -n "$4" -w "$5" \
            --json "$tmp/mpi_${c}_$1.json" >"$tmp/mpi_${c}_$1.txt"
    done
}
small_hi=$max
[ "$small_hi" -gt "$split" ] && small_hi=$split
run_range small 65536 "$small_hi" 50 5
if [ "$max" -gt "$split" ]; then
    # From 16M by fours (the small range's next size), or MAXBYTES alone below that.
    large_lo=$((split * 4))
    [ "$large_lo" -le "$max" ] || large_lo=$max
    run_range large "$large_lo" "$max" 5 1
fi

echo "== latency" >&2
# Blocking calls, as MPI_Allreduce is; then the same with a request and sc_wait.
"$scrun" -n 2 "$scbench" allreduce -b 8 -e 8 -n 20000 -w 1000 -c 1 --blocking \
    --json "$tmp/sc_latency.json" >"$tmp/sc_latency.txt"
"$scrun" -n 2 "$scbench" allreduce -b 8 -e 8 -n 20000 -w 1000 -c 1 \
    --json "$tmp/sc_reqlatency.json" >"$tmp/sc_reqlatency.txt"
$mpirun "$mpibench" latency --json "$tmp/mpi_latency.json" >"$tmp/mpi_latency.txt"

status=0
python3 - "$tmp" <<'EOF' || status=$?
import glob, json, os, sys

tmp = sys.argv[1]

def rows(prefix):
    out = {}
    for path in sorted(glob.glob(os.path.join(tmp, prefix + "_*.json"))):
        if path.endswith("latency.json"):
            continue
        for r in json.load(open(path)):
            out[(r["coll"], r["bytes"])] = r
    return out

sc, reg, mpi = rows("sc"), rows("reg"), rows("mpi")
print("# 2 ranks, float32 sum; busbw in GB/s (nccl-tests definition); shardcomm with plain"
      " and with registered buffers (sc-bench -R 1, sc_mem_alloc); ratio = shardcomm /"
      " Open MPI (> 1: shardcomm faster)")
print("%-15s %12s %10s %10s %10s %7s %7s %7s" % ("collective", "bytes", "shardcomm",
                                                 "registered", "Open MPI", "ratio",
                                                 "ratio_R", "#wrong"))
wrong = 0
for key in sorted(sc, key=lambda k: (["allreduce", "reduce_scatter", "allgather", "sendrecv"].index(k[0]), k[1])):
    s, g, m = sc[key], reg.get(key), mpi.get(key)
    w = (s["wrong"] or 0) + ((g["wrong"] or 0) if g else 0)
    wrong += w
    mb = m["busbw"] if m else float("nan")
    gb = g["busbw"] if g else float("nan")
    ratio = s["busbw"] / mb if m and mb > 0 else float("nan")
    ratio_r = gb / mb if g and m and mb > 0 else float("nan")
    print("%-15s %12d %10.2f %10.2f %10.2f %7.2f %7.2f %7d" % (key[0], key[1], s["busbw"], gb,
                                                              mb, ratio, ratio_r, w))
ls = json.load(open(os.path.join(tmp, "sc_latency.json")))[0]
lm = json.load(open(os.path.join(tmp, "mpi_latency.json")))[0]
lr = json.load(open(os.path.join(tmp, "sc_reqlatency.json")))[0]
print("# 8-byte allreduce latency: shardcomm %.2f us (blocking), Open MPI %.2f us, "
      "shardcomm / Open MPI %.2f (< 1: shardcomm faster)"
      % (ls["time_us"], lm["time_us"], ls["time_us"] / lm["time_us"]))
print("# 8-byte allreduce with a request and sc_wait: %.2f us" % lr["time_us"])
wrong += (ls["wrong"] or 0) + (lr["wrong"] or 0)
print("# shardcomm wrong elements over all rows: %d" % wrong)
sys.exit(1 if wrong else 0)
EOF

if [ -f "$membw_src" ] && gcc -O3 -march=native -fopenmp "$membw_src" -o "$tmp/membw" 2>/dev/null; then
    echo "# memory bandwidth ceiling (membw.c, bytes read + written):"
    OMP_NUM_THREADS=1 "$tmp/membw" | sed 's/^/#   /'
    OMP_NUM_THREADS=2 "$tmp/membw" | sed 's/^/#   /'
else
    echo "# membw.c not found or not built: no memory bandwidth ceiling stated"
fi
exit $status
