#!/usr/bin/env bash
# killed_rank_test.sh SCRUN PROG TEST NRANKS DEAD [ARGS...]: NRANKS ranks through scrun
# running PROG TEST ARGS..., where rank DEAD kills itself with SIGKILL in the middle of
# the test's communication. scrun must exit 1 naming rank DEAD as the failure, and every
# surviving rank must have checked its own error (PASS) and exited 0 - scrun then names
# no other rank - within 20 s.
set -u

SCRUN=$1
PROG=$2
TEST=$3
NRANKS=$4
DEAD=$5
shift 5
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
# Where ranks leave each other notes (test_faults' store_killed_mid_rendezvous_...).
export FAULT_DIR=$DIR
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
"$SCRUN" -n "$NRANKS" --grace 10 "$PROG" "$TEST" "$@" </dev/null >"$OUT" 2>"$ERR"
rc=$?
elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')

[[ $rc == 1 ]] || fail "scrun exited with $rc, expected 1"
grep -qxF "scrun: rank $DEAD was killed by signal 9 (SIGKILL)" "$ERR" ||
    fail "scrun did not name rank $DEAD as killed by signal 9"
! grep -E "^scrun: rank [0-9]+ (exited|was killed)" "$ERR" | grep -qvF "rank $DEAD " ||
    fail "scrun named a survivor"
! grep -q "failed first; ranks stopped by scrun" "$ERR" ||
    fail "a surviving rank did not exit 0"
for ((r = 0; r < NRANKS; r++)); do
    [[ $r == "$DEAD" ]] && continue
    grep -qxF "[$r] PASS: $TEST (rank $r)" "$OUT" || fail "rank $r did not pass"
done
! grep -qF "[$DEAD] PASS" "$OUT" || fail "rank $DEAD survived"
awk -v e="$elapsed" 'BEGIN { exit !(e < 20) }' || fail "took ${elapsed}s"
grep -F "] rank " "$OUT"
echo "scrun exited 1 after ${elapsed}s naming rank $DEAD"
