#!/usr/bin/env bash
# At SC_LOG_LEVEL=info each rank says how it was bound, and also that it was not
# (binding none was said only at debug level). Usage: bind_log_test.sh SCRUN SC_BENCH
set -u
scrun=$1
bench=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for mode in none core; do
    SC_LOG_LEVEL=info SC_TIMEOUT=20 "$scrun" -n 2 --bind $mode \
        "$bench" allreduce -b 8 -e 8 -n 1 -w 0 >"$out" 2>&1 ||
        { echo "FAIL: --bind $mode: exit status $?"; cat "$out"; exit 1; }
    for r in 0 1; do
        if [ $mode = none ]; then
            want="[$r] [shardcomm rank $r] INFO: local rank $r of 2 left unbound (binding: none)"
        else
            want="[$r] [shardcomm rank $r] INFO: local rank $r of 2 bound to "
        fi
        grep -qF "$want" "$out" || { echo "FAIL: --bind $mode: no line '$want'"; cat "$out"; exit 1; }
    done
done
echo "PASS"
