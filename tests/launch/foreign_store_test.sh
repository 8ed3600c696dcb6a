#!/usr/bin/env bash
# A rank whose master address and port lead to a program that is no shardcomm store
# (not_a_store.py MODE: one that echoes, as a rank's connection to itself does; one that
# greets in a protocol of its own; one that closes each connection unanswered, as UCX's
# TCP listener does) fails within a few seconds, saying that what answered there is not
# a shardcomm store and where, with a status of sc_status_t. It failed with
# "SC_ERR_UNKNOWN_STATUS: rank 3: c" (the echo of its own hello read as an answer: its
# rank as the status, bytes of its blob's length as the sentence), or waited SC_TIMEOUT
# + 3 s and said the store "never answered".
# Usage: foreign_store_test.sh SC_INFO MODE, under with_reserved_port.py SC_MASTER_PORT.
set -u
sc_info=$1
mode=$2
: "${SC_MASTER_PORT:?run under with_reserved_port.py SC_MASTER_PORT}"
. "$(dirname "$0")/launch_env.sh"
logs=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server"; rm -rf "$logs"' EXIT

python3 "$(dirname "$0")/not_a_store.py" "$mode" "$SC_MASTER_PORT" >"$logs/server" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q listening "$logs/server" && break
  sleep 0.1
done
grep -q listening "$logs/server" || { echo "not_a_store.py did not start:"; cat "$logs/server"; exit 1; }

# closes_slowly with SC_TIMEOUT=inf: the rank took each close for the store's eviction
# (it came 0.3 s after the connect, past SC_STORE_EVICT_S) and connected again for ever.
timeout=20
[[ $mode == closes_slowly ]] && timeout=inf
t0=$SECONDS
SC_TIMEOUT=$timeout SC_BIND=none SC_RANK=3 SC_WORLD_SIZE=4 SC_MASTER_ADDR=127.0.0.1 \
  "$sc_info" --transports >"$logs/rank" 2>&1
rc=$?
elapsed=$((SECONDS - t0))

fail() {
  echo "FAIL $mode: $*"
  cat "$logs/rank"
  exit 1
}
((rc != 0)) || fail "the rank succeeded"
((elapsed < 5)) || fail "the rank took $elapsed s to fail (SC_TIMEOUT $timeout)"
grep -qF "SC_ERR_INVALID_ARG: rank 3: rendezvous failed: what answered at 127.0.0.1:$SC_MASTER_PORT is not a shardcomm store" "$logs/rank" ||
  fail "the rank does not say that what answered at 127.0.0.1:$SC_MASTER_PORT is not a store"
echo "ok: $mode: $(grep -m1 -o 'is not a shardcomm store ([^)]*)' "$logs/rank"), in $elapsed s"
