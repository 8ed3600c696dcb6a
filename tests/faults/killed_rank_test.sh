#!/usr/bin/env bash
# killed_rank_test.sh SCRUN TEST_FAULTS: 4 ranks through scrun, rank 2 killed by SIGKILL in
# the middle of an allreduce (test_faults killed_rank_fails_pending_and_later_calls).
# scrun must exit 1 naming rank 2 as the failure, and every surviving rank must have
# checked its own error (PASS) and exited 0 - scrun then names no other rank.
set -u

SCRUN=$1
PROG=$2
TEST=killed_rank_fails_pending_and_later_calls
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
OUT=$DIR/stdout
ERR=$DIR/stderr

fail() {
    echo "FAIL: $*" >&2
    echo "--- scrun stdout:" >&2
    cat "$OUT" >&2
    echo "--- scrun stderr:" >&2
    cat "$ERR" >&2
    exit 1
}

t0=$EPOCHREALTIME
# The grace period only bounds a survivor that hangs: they ignore SIGTERM to report.
"$SCRUN" -n 4 --grace 10 "$PROG" "$TEST" </dev/null >"$OUT" 2>"$ERR"
rc=$?
elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')

[[ $rc == 1 ]] || fail "scrun exited with $rc, expected 1"
grep -qxF "scrun: rank 2 was killed by signal 9 (SIGKILL)" "$ERR" ||
    fail "scrun did not name rank 2 as killed by signal 9"
! grep -qE "^scrun: rank [013] (exited|was killed)" "$ERR" || fail "scrun named a survivor"
! grep -q "failed first; ranks stopped by scrun" "$ERR" ||
    fail "a surviving rank did not exit 0"
for r in 0 1 3; do
    grep -qxF "[$r] PASS: $TEST (rank $r)" "$OUT" || fail "rank $r did not pass"
done
! grep -qF "[2] PASS" "$OUT" || fail "rank 2 survived"
awk -v e="$elapsed" 'BEGIN { exit !(e < 20) }' || fail "took ${elapsed}s"
grep -F "] rank " "$OUT"
echo "scrun exited 1 after ${elapsed}s naming rank 2"
