#!/usr/bin/env bash
# A process claiming rank 1 that the store refuses, and no rank 1 after it: the
# rendezvous times out, and its sentence says what was refused, not only that "rank 1
# never arrived". Usage: refused_rank_test.sh SCRUN SC_INFO MODE, under
# with_reserved_port.py SC_MASTER_PORT; `scrun -n 2` (SC_TIMEOUT 3) of sc-info whose
# rank 1 is, by MODE:
#   protocol2     other_protocol_rank.py protocol2: a shardcomm from before 2026-12-07
#   protocol4     other_protocol_rank.py protocol4: a later one (its rank cannot be read)
#   other_launch  sc-info with an SC_LAUNCH_ID of its own: a rank of another launch
set -u
scrun=$1 sc_info=$2 mode=$3 port=${SC_MASTER_PORT:?run under with_reserved_port.py}
. "$(dirname "$0")/launch_env.sh"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Rank 1 of the launch, for bash -c with MODE PORT SC_INFO PROTOCOL_RANK_SCRIPT: it waits
# for the store to listen, and exits 0 once refused, so that scrun waits for rank 0.
rank_1='mode=$1 port=$2 sc_info=$3 other=$4
[ "$SC_RANK" = 0 ] && exec "$sc_info" --transports
for _ in $(seq 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.05; done
case $mode in
other_launch) SC_LAUNCH_ID=another-launch "$sc_info" --transports ;;
*) python3 "$other" "$mode" "$port" 1 2 ;;
esac
exit 0'
SC_TIMEOUT=3 SC_BIND=none "$scrun" -n 2 --master-port "$port" -- \
  bash -c "$rank_1" rank_1 "$mode" "$port" "$sc_info" \
  "$(dirname "$0")/other_protocol_rank.py" >"$logs/out" 2>&1 && {
  cat "$logs/out"
  echo "FAIL $mode: the launch succeeded without its rank 1"
  exit 1
}
case $mode in
protocol2) why="a process claiming rank 1 was refused: it runs rendezvous protocol 1 or 2 (a shardcomm from before 2026-12-07" ;;
protocol4) why="a process was refused (which rank it claimed, its hello does not say in this protocol): it runs rendezvous protocol 4, this store protocol 3" ;;
other_launch) why="a process claiming rank 1 was refused: it belongs to launch another-launch (from SC_LAUNCH_ID)" ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac
grep -qF "rank 1 never arrived (1 of 2); $why" "$logs/out" || {
  cat "$logs/out"
  echo "FAIL $mode: rank 0's timeout does not say what the store refused: $why"
  exit 1
}
echo "ok: $mode"
