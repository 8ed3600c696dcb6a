#!/usr/bin/env bash
# Rank 0's sc_comm_init returns a failed rendezvous within moments, as every other rank
# does, though a rank never came. Usage: failed_rendezvous_test.sh SC_INFO MODE, under
# with_reserved_port.py SC_MASTER_PORT.
#   rank_missing_timeout_inf  3 ranks, SC_TIMEOUT=inf: rank 1 fails before it joins
#                (SC_BIND=bogus) and tells the store, rank 2 never starts: rank 0 fails
#                naming rank 1's failure once it waited 5 s for its store to tell rank 2
#                (SC_STORE_FAILED_WAIT_S), within 9 s; until 2026-12-07 its store waited
#                for ever to tell rank 2, and rank 0 for its store, so rank 0 hung
#   rank0_failing_timeout_inf  3 ranks, SC_TIMEOUT=inf: rank 0 fails before it can serve
#                (UCX_TLS=bogus) and serves the port only to say so, rank 1 is told at
#                once, rank 2 never starts: rank 0 fails with its own sentence once it
#                waited 5 s for its store to tell rank 2, within 8 s of its store's
#                listening; until 2026-12-07 it told them within its sc_comm_init until
#                every rank was told or 30 s passed
set -u
sc_info=$1
mode=$2
: "${SC_MASTER_PORT:?run under with_reserved_port.py SC_MASTER_PORT}"
. "$(dirname "$0")/launch_env.sh"
export SC_BIND=none SC_MASTER_ADDR=127.0.0.1 SC_WORLD_SIZE=3 SC_TIMEOUT=inf
logs=$(mktemp -d)
pid0=
trap '[[ -n $pid0 ]] && kill -9 "$pid0" 2>/dev/null; wait 2>/dev/null; rm -rf "$logs"' EXIT

fail() {
  echo "FAIL $mode: $*"
  for f in "$logs"/*; do echo "--- rank ${f##*/}:"; tail -4 "$f"; done
  exit 1
}

case $mode in
rank_missing_timeout_inf)
  SC_RANK=0 SC_LOCAL_RANK=0 "$sc_info" --transports >"$logs/0" 2>&1 &
  pid0=$!
  wait_for 20 eval 'ss -Hltn "sport = :$SC_MASTER_PORT" | grep -q .' ||
    fail "rank 0's store never listened"
  SC_RANK=1 SC_LOCAL_RANK=1 SC_BIND=bogus "$sc_info" --transports >"$logs/1" 2>&1 &&
    fail "rank 1 succeeded with SC_BIND=bogus"
  # Rank 1 returns once the store answered it: rank 0 has the failure from then on.
  wait_for 9 eval '! kill -0 "$pid0" 2>/dev/null' ||
    fail "rank 0 still runs 9 s after rank 1 told the store its failure"
  wait "$pid0" && fail "rank 0 succeeded"
  pid0=
  grep -q "SC_ERR_PEER_FAILED: rank 0: .*rank 1 could not join it (its sc_comm_init failed): SC_BIND=bogus is not one of" \
    "$logs/0" || fail "rank 0 does not give rank 1's failure"
  ;;
rank0_failing_timeout_inf)
  SC_RANK=0 SC_LOCAL_RANK=0 UCX_TLS=bogus "$sc_info" --transports >"$logs/0" 2>&1 &
  pid0=$!
  wait_for 20 eval 'ss -Hltn "sport = :$SC_MASTER_PORT" | grep -q .' ||
    fail "rank 0's store never listened"
  SC_RANK=1 SC_LOCAL_RANK=1 "$sc_info" --transports >"$logs/1" 2>&1 &&
    fail "rank 1 succeeded though rank 0 failed"
  grep -q "SC_ERR_PEER_FAILED: .*rank 0 could not serve it (its sc_comm_init failed)" \
    "$logs/1" || fail "rank 1 does not give rank 0's failure"
  wait_for 8 eval '! kill -0 "$pid0" 2>/dev/null' ||
    fail "rank 0 still runs 8 s after its store listened to tell its failure"
  wait "$pid0" && fail "rank 0 succeeded"
  pid0=
  grep -q "SC_ERR_TRANSPORT: rank 0: UCX context could not be created" "$logs/0" ||
    fail "rank 0 does not give its own failure"
  ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac
echo "ok: $mode"
