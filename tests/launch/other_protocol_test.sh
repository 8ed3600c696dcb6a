#!/usr/bin/env bash
# A rank of another shardcomm version (other_protocol_rank.py MODE: protocol 2, a library
# from before 2026-12-07, or a later protocol 4) reaches the store of launch A while it
# waits for its rank 1 (waiting_launch.sh), claiming rank 1. The store must answer it at
# once with SC_ERR_MISMATCH (-6) and a sentence naming both protocols, without taking
# the slot, and launch A must complete with its own ranks. A protocol-2 hello was taken
# for this one's (the two were the same): the process took rank 1's slot, and launch A
# failed on its empty blob; a protocol-4 one was closed unanswered.
# Usage: other_protocol_test.sh SCRUN SC_BENCH MODE, under with_reserved_port.py
# SC_MASTER_PORT.
set -u
. "$(dirname "$0")/waiting_launch.sh"

fail() {
  echo "FAIL $mode: $*"
  echo "--- launch A:"; cat "$logs/a"
  echo "--- the other protocol's rank:"; cat "$logs/other"
  exit 1
}
start_waiting_launch
t0=$SECONDS
python3 "$(dirname "$0")/other_protocol_rank.py" "$mode" "$port" 1 2 >"$logs/other" 2>&1
elapsed=$((SECONDS - t0))
check_waiting_launch
((elapsed < 3)) || fail "the other protocol's rank took $elapsed s to be answered"
case $mode in
protocol2) theirs="protocol 1 or 2 (a shardcomm from before 2026-12-07" ;;
*) theirs="protocol 4:" ;;
esac
grep -qF "magic 0x53435354 status -6: rendezvous failed: the store at 127.0.0.1:$port speaks rendezvous protocol 3 (shardcomm " "$logs/other" &&
  grep -qF "this rank $theirs" "$logs/other" ||
  fail "the other protocol's rank was not told SC_ERR_MISMATCH naming both protocols"
grep -q "refused a process of rendezvous protocol" "$logs/a" ||
  fail "launch A's rank 0 did not log the refusal"
echo "ok: $mode: answered in $elapsed s; launch A completed"
