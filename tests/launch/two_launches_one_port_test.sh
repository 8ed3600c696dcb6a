#!/usr/bin/env bash
# Two scrun launches on one host given one master port (two jobs started with the same
# port, or a rank of an earlier launch still running): launch A (2 ranks, its rank 1
# 4 s late) serves the store; launch B, started once A's store listens, cannot listen
# there (its rank 0 waits 10 s first, so that B's other ranks reach A's store before
# scrun stops them) and its other ranks reach A's store. They must fail at once with
# SC_ERR_MISMATCH saying that the store serves another launch (the first to fail says
# so; scrun stops the others), and launch A must complete with its own ranks (sc-bench
# -c 1 checks the results). Mode other_size:
# B has 4 ranks, which failed A's rendezvous on every rank ("a process claimed rank 3 of
# world size 4, but rank 0 has world size 2"); same_size: B has 2, whose rank 1 took
# A's free slot unnoticed (A's rank 1 then found the store gone, and A's rank 0 ran with
# B's rank 1).
# Usage: two_launches_one_port_test.sh SCRUN SC_BENCH MODE, under with_reserved_port.py
# SC_MASTER_PORT.
set -u
. "$(dirname "$0")/waiting_launch.sh"
case $mode in
other_size) nb=4 ;;
same_size) nb=2 ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac

fail() {
  echo "FAIL $mode: $*"
  echo "--- launch A:"; cat "$logs/a"
  echo "--- launch B:"; cat "$logs/b"
  exit 1
}
start_waiting_launch
t0=$SECONDS
SC_TIMEOUT=20 SC_BIND=none "$scrun" -n "$nb" --master-port "$port" -- \
  bash -c "$late" late 0 10 "$bench" allreduce -b 8 -e 1K -f 2 -n 2 -w 1 -c 1 \
  >"$logs/b" 2>&1
rc_b=$?
elapsed_b=$((SECONDS - t0))
check_waiting_launch
((rc_b != 0)) || fail "launch B succeeded"
((elapsed_b < 4)) || fail "launch B took $elapsed_b s to fail (its ranks wait SC_TIMEOUT 20 s)"
# scrun stops the others once one rank failed: the first to fail says why.
r=$(sed -n 's/^scrun: rank \([0-9]*\) failed first.*/\1/p' "$logs/b")
[ -n "$r" ] && ((r > 0)) || fail "no rank of launch B other than 0 failed first"
grep -qE "^\[$r\] .*SC_ERR_MISMATCH: rank $r: rendezvous failed: the store at 127\.0\.0\.1:$port serves launch scrun-[0-9a-f]{16} \(from SC_LAUNCH_ID\), this rank belongs to launch scrun-[0-9a-f]{16} \(from SC_LAUNCH_ID\): two launches share the master port" "$logs/b" ||
  fail "rank $r of launch B does not say that the store serves another launch"
! grep -v SC_ERR_MISMATCH "$logs/b" | grep -q "SC_ERR_" ||
  fail "a rank of launch B failed otherwise"
echo "ok: $mode: launch B failed in $elapsed_b s; launch A completed"
