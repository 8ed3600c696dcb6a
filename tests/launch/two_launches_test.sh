#!/usr/bin/env bash
# Two launches on one host, as `torchrun --nnodes 2` or `scrun --nnodes 2` run there for
# a try-out: each gives its ranks local ranks 0..N-1 of N, yet all of them share the
# host's memory. Both must form the communicator of 2N ranks and check their results
# (sc-bench -c 1); until the shared-memory warm-up counted the ranks by host name, every
# rank waited for a peer that paired with another. The port comes from SC_MASTER_PORT,
# set by with_reserved_port.py (tests/launch/CMakeLists.txt).
# Usage: two_launches_test.sh SCRUN SC_BENCH [MASTER_ADDR [N]] (127.0.0.1 and 2 ranks a
# launch by default). With ::1, an IPv6 master address (skipped where the loopback
# interface has none): the store listened on IPv4 alone and the ranks looked the address
# up as IPv4 only, so rank 1 failed after SC_TIMEOUT + 3 s ("the address ::1 does not
# resolve") and rank 0 said only that rank 1 never arrived. [::1] is the same address
# in brackets.
set -u
scrun=$1
bench=$2
addr=${3:-127.0.0.1}
n=${4:-2}
port=${SC_MASTER_PORT:?run under with_reserved_port.py SC_MASTER_PORT}
if { [ "$addr" = ::1 ] || [ "$addr" = "[::1]" ]; } && ! grep -qE '^0{31}1 .* lo$' /proc/net/if_inet6 2>/dev/null; then
  echo "SKIP: the loopback interface has no ::1"
  exit 77
fi
log=/tmp/two_launches_$$
pids=()
for node in 0 1; do
  SC_TIMEOUT=20 "$scrun" -n "$n" --nnodes 2 --node-rank $node --master-addr "$addr" \
      --master-port "$port" -- "$bench" allreduce -b 8 -e 1M -f 32 -n 2 -w 1 -c 1 \
      >"$log.$node" 2>&1 &
  pids+=($!)
done
rc=0
for node in 0 1; do
  wait "${pids[$node]}" || { echo "launch $node failed:"; cat "$log.$node"; rc=1; }
done
if [ $rc -eq 0 ]; then
  grep -q "nranks $((2 * n))" "$log.0" ||
    { echo "rank 0 did not see $((2 * n)) ranks:"; cat "$log.0"; rc=1; }
  grep -q "wrong: 0" "$log.0" || { echo "wrong results:"; cat "$log.0"; rc=1; }
  grep -q "several launches on one host" "$log.1" ||
    { echo "no warning about the shared cores:"; cat "$log.1"; rc=1; }
fi
grep -h "avg busbw" "$log.0"
rm -f "$log".*
exit $rc
