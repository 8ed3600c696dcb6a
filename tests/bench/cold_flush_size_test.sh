#!/usr/bin/env bash
# cold_flush_size_test.sh SCRUN SC_BENCH PROFILE: sc-bench reducer's cold measurement
# writes over twice the L3 cache of a core (the library's sc_info_cache_bytes, through
# hwloc; read here from the kernel's list independently), 64 MiB where that is 16 MiB
# or less or not listed: glibc's sysconf gave 384 MiB on AMD EPYC VMs whose cores share
# 32 MiB, so each rank wrote 768 MiB before every cold all-reduce. The header is sized
# on the core rank 0 runs on, so the size of any core's L3 is accepted (they differ on
# some CPUs: 96 and 32 MiB on a 7950X3D).
set -u
scrun=$1 bench=$2 profile=$3
wants=()
for d in /sys/devices/system/cpu/cpu[0-9]*/cache/index*; do
    [[ $(cat "$d/level" 2>/dev/null) == 3 ]] || continue
    size=$(cat "$d/size")
    case $size in
    *K) l3=$(( ${size%K} << 10 )) ;;
    *M) l3=$(( ${size%M} << 20 )) ;;
    *) l3=$size ;;
    esac
    wants+=("$l3")
done
(( ${#wants[@]} > 0 )) || wants=(0)
pattern=
for l3 in $(printf '%s\n' "${wants[@]}" | sort -un); do
    if (( l3 > 16 << 20 )); then
        want=$(( 2 * l3 >> 20 ))
    else
        want=64
    fi
    pattern+="${pattern:+|}$want"
done
out=$("$scrun" -n 2 "$bench" reducer --profile "$profile" --sweep 1 --iters 1 --warmup 0 2>&1)
rc=$?
printf '%s\n' "$out"
[[ $rc == 0 ]] || { echo "FAIL: sc-bench reducer exited with $rc" >&2; exit 1; }
grep -qE "caches flushed first \\(($pattern) MiB written over\\)" <<<"$out" ||
    { echo "FAIL: no header line says the cold measurement writes $pattern MiB (twice a" \
           "core's L3 cache as /sys lists it, or 64)" >&2; exit 1; }
