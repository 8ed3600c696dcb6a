#!/usr/bin/env bash
# cold_flush_size_test.sh SCRUN SC_BENCH PROFILE: sc-bench reducer's cold measurement
# writes over twice the L3 cache of a core as the kernel lists it (cpu0's, here), 64 MiB
# where that is 16 MiB or less: glibc's sysconf gave 384 MiB on AMD EPYC VMs whose cores
# share 32 MiB, so each rank wrote 768 MiB before every cold all-reduce.
set -u
scrun=$1 bench=$2 profile=$3
l3=0
for d in /sys/devices/system/cpu/cpu0/cache/index*; do
    [[ $(cat "$d/level" 2>/dev/null) == 3 ]] || continue
    size=$(cat "$d/size")
    case $size in
    *K) l3=$(( ${size%K} << 10 )) ;;
    *M) l3=$(( ${size%M} << 20 )) ;;
    *) l3=$size ;;
    esac
    break
done
if (( l3 == 0 )); then
    l3=$(getconf LEVEL3_CACHE_SIZE 2>/dev/null || echo 0)
    [[ $l3 =~ ^[0-9]+$ ]] || l3=0
fi
if (( l3 > 16 << 20 )); then
    want=$(( 2 * l3 >> 20 ))
else
    want=64
fi
out=$("$scrun" -n 2 "$bench" reducer --profile "$profile" --sweep 1 --iters 1 --warmup 0 2>&1)
rc=$?
printf '%s\n' "$out"
[[ $rc == 0 ]] || { echo "FAIL: sc-bench reducer exited with $rc" >&2; exit 1; }
grep -qE "caches flushed first \\($want MiB written over\\)" <<<"$out" ||
    { echo "FAIL: no header line says the cold measurement writes $want MiB (twice the" \
           "L3 cache of $((l3 >> 20)) MiB)" >&2; exit 1; }
