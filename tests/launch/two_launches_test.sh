#!/usr/bin/env bash
# Two launches on one host, as `torchrun --nnodes 2` or `scrun --nnodes 2` run there for
# a try-out: each gives its ranks local ranks 0..1 of 2, yet all four share the host's
# memory. Both must form the 4-rank communicator and check their results (sc-bench -c 1);
# until the shared-memory warm-up counted the ranks by host name, every rank waited for
# a peer that paired with another. The port comes from SC_MASTER_PORT, set by
# with_reserved_port.py (tests/launch/CMakeLists.txt).
set -u
scrun=$1
bench=$2
port=${SC_MASTER_PORT:?run under with_reserved_port.py SC_MASTER_PORT}
log=/tmp/two_launches_$$
pids=()
for node in 0 1; do
  SC_TIMEOUT=20 "$scrun" -n 2 --nnodes 2 --node-rank $node --master-addr 127.0.0.1 \
      --master-port "$port" -- "$bench" allreduce -b 8 -e 1M -f 32 -n 2 -w 1 -c 1 \
      >"$log.$node" 2>&1 &
  pids+=($!)
done
rc=0
for node in 0 1; do
  wait "${pids[$node]}" || { echo "launch $node failed:"; cat "$log.$node"; rc=1; }
done
if [ $rc -eq 0 ]; then
  grep -q "nranks 4" "$log.0" || { echo "rank 0 did not see 4 ranks:"; cat "$log.0"; rc=1; }
  grep -q "wrong: 0" "$log.0" || { echo "wrong results:"; cat "$log.0"; rc=1; }
  grep -q "several launches on one host" "$log.1" ||
    { echo "no warning about the shared cores:"; cat "$log.1"; rc=1; }
fi
grep -h "avg busbw" "$log.0"
rm -f "$log".*
exit $rc
