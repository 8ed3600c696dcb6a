#!/usr/bin/env bash
# Rank 0 of a rendezvous holds one connection per rank until every rank arrived. Usage:
# open_files_test.sh SC_INFO MODE, under with_reserved_port.py SC_MASTER_PORT.
#   soft_limit   16 ranks, every rank's soft limit of open files 24 (hard unchanged):
#                the library raises it, and the communicator forms (rank 0 ran out of
#                descriptors and every rank timed out "never arrived" after SC_TIMEOUT);
#                the ranks, ending at their own pace, print no UCX warning or error
#   hard_limit   16 ranks, rank 0's soft and hard limit 24: every rank fails at once
#                saying rank 0 ran out of open files, and what to raise (a busy loop on
#                accept until SC_TIMEOUT, then "ranks ... never arrived")
set -u
sc_info=$1
mode=$2
n=16
: "${SC_MASTER_PORT:?run under with_reserved_port.py SC_MASTER_PORT}"
. "$(dirname "$0")/launch_env.sh"
export SC_TIMEOUT=20 SC_BIND=none SC_WORLD_SIZE=$n SC_MASTER_ADDR=127.0.0.1
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

t0=$SECONDS
pids=()
for ((r = 0; r < n; r++)); do
  limit="ulimit -Sn 24"
  [[ $mode == hard_limit ]] && { ((r == 0)) && limit="ulimit -n 24" || limit=true; }
  SC_RANK=$r SC_LOCAL_RANK=$r bash -c "$limit && exec \"\$0\" --transports" "$sc_info" \
    >"$logs/$r" 2>&1 &
  pids+=($!)
done
failed=0
for r in "${!pids[@]}"; do
  wait "${pids[$r]}" || failed=$((failed + 1))
done
elapsed=$((SECONDS - t0))

fail() {
  echo "FAIL $mode: $*"
  for ((r = 0; r < n; r++)); do echo "--- rank $r:"; tail -3 "$logs/$r"; done
  exit 1
}
case $mode in
soft_limit)
  ((failed == 0)) || fail "$failed ranks failed"
  for ((r = 0; r < n; r++)); do
    ! grep -qE "UCX +(WARN|ERROR)" "$logs/$r" ||
      fail "rank $r printed: $(grep -m1 -E "UCX +(WARN|ERROR)" "$logs/$r")"
  done
  ;;
hard_limit)
  ((failed == n)) || fail "$((n - failed)) ranks succeeded"
  ((elapsed < 10)) || fail "the ranks took $elapsed s to fail (SC_TIMEOUT 20 s)"
  for ((r = 0; r < n; r++)); do
    grep -qF "rank 0 ran out of open files after" "$logs/$r" ||
      fail "rank $r does not say rank 0 ran out of open files"
    grep -qF "raise the limit (ulimit -n)" "$logs/$r" || fail "rank $r does not say what to raise"
  done
  ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac
echo "ok: $mode, $failed of $n ranks failed, in $elapsed s"
