#!/usr/bin/env bash
# Ranks on several hosts (each under its own host name: unshare -u, skipped where that
# is not allowed) with the local size a launcher gives, against the ranks sharing each
# host name. Usage: local_size_hosts_test.sh SC_INFO MODE, under with_reserved_port.py
# SC_MASTER_PORT (tests/launch/CMakeLists.txt).
#   larger_than_the_host     two hosts, each rank told SC_LOCAL_SIZE=2 (the world): every
#                            rank fails at once naming SC_LOCAL_SIZE and the host. Both
#                            took themselves for one node's and UCX failed with "no
#                            active messages transport ... Destination is unreachable"
#   local_rank_past_the_host two ranks on one host, rank 1 told SC_LOCAL_RANK=3 and no
#                            local size: every rank fails at once naming rank 1, its local
#                            rank and the variable. Rank 1 alone said so, and rank 0 only
#                            that rank 1 "exited or was killed"
#   smaller_without_local_rank  four ranks on one host, each told SC_LOCAL_SIZE=2 (two
#                            launches' worth) and no local rank: every rank fails at once
#                            naming rank 2, the first counted past the local size. Ranks 2
#                            and 3 failed their binding alone, and ranks 0 and 1 with
#                            "Endpoint timeout"
#   duplicate_local_rank     two ranks on one host, both told SC_LOCAL_RANK=0: every rank
#                            fails at once naming both (they bound the same cores and
#                            would take the same GPU, silently)
#   duplicate_of_a_counted_local_rank  two ranks on one host, rank 0 told SC_LOCAL_RANK=1
#                            and rank 1 given none (counted: 1): every rank fails at once
#                            naming both. Both were local rank 1 of 2, bound to the same
#                            cores, silently
#   two_launches_on_one_host four ranks on one host, two launches' worth (SC_LOCAL_SIZE=2,
#                            local ranks 0 1 0 1): the same local rank twice is right there
#   slurm_counts_per_node    Slurm's layout SLURM_STEP_TASKS_PER_NODE=2,1: ranks 0 and 1
#                            on node0, rank 2 on node1, which gets local size 1 (it got
#                            the leading 2 and bound to half the cores, silently)
#   slurm_fewer_than_requested  the same step under --ntasks-per-node=2, which sets
#                            SLURM_NTASKS_PER_NODE=2 on every node, node1 too: the request,
#                            not what the node got. Every rank failed, rank 2 taken for
#                            local size 2 "but 1 rank of 3 has the host name node1"
set -u
sc_info=$1
mode=$2
port=${SC_MASTER_PORT:?run under with_reserved_port.py SC_MASTER_PORT}
unshare -u true 2>/dev/null || { echo "SKIP: unshare -u is not allowed here"; exit 77; }
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
. "$(dirname "$0")/launch_env.sh"
export SC_TIMEOUT=8 SC_LOG_LEVEL=info

# on_host NAME ENV...: runs sc-info --transports as host NAME with ENV, in the background.
pids=()
on_host() {
  local host=$1
  shift
  env "$@" unshare -u sh -c 'hostname "$1" && exec "$2" --transports' _ "$host" "$sc_info" \
      >"$logs/${#pids[@]}" 2>&1 &
  pids+=($!)
}

# wait_all: the exit status of each, in $logs/N.rc.
wait_all() {
  local i
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    echo $? >"$logs/$i.rc"
  done
}

fail() {
  echo "FAIL $mode: $*"
  for f in "$logs"/[0-9]; do echo "--- rank ${f##*/}:"; cat "$f"; done
  exit 1
}

# every_rank_fails N TEXT WHAT: ranks 0..N-1 each failed, saying TEXT (else "rank R
# does not name WHAT").
every_rank_fails() {
  local r
  for ((r = 0; r < $1; r++)); do
    [[ $(cat "$logs/$r.rc") != 0 ]] || fail "rank $r succeeded"
    grep -qF "$2" "$logs/$r" || fail "rank $r does not name $3"
  done
}

case $mode in
larger_than_the_host)
  t0=$SECONDS
  for r in 0 1; do
    on_host node$r SC_RANK=$r SC_WORLD_SIZE=2 SC_LOCAL_RANK=0 SC_LOCAL_SIZE=2
  done
  wait_all
  ((SECONDS - t0 < 5)) || fail "the ranks took $((SECONDS - t0)) s to fail"
  for r in 0 1; do
    [[ $(cat "$logs/$r.rc") != 0 ]] || fail "rank $r succeeded"
    grep -qF "rank 0 has local size 2 (from SC_LOCAL_SIZE) but 1 rank of 2 has the host name node0" \
      "$logs/$r" || fail "rank $r does not name the local size, its variable and the host"
    ! grep -q "unreachable" "$logs/$r" || fail "rank $r got UCX's error"
  done
  ;;
local_rank_past_the_host)
  on_host node0 SC_RANK=0 SC_WORLD_SIZE=2
  on_host node0 SC_RANK=1 SC_WORLD_SIZE=2 SC_LOCAL_RANK=3
  wait_all
  every_rank_fails 2 "rank 1 has local rank 3 (from SC_LOCAL_RANK) but its host node0 has local size 2" \
    "rank 1's local rank, its variable and the host"
  ;;
smaller_without_local_rank)
  for r in 0 1 2 3; do
    on_host node0 SC_RANK=$r SC_WORLD_SIZE=4 SC_LOCAL_SIZE=2
  done
  wait_all
  every_rank_fails 4 "rank 2 is given local size 2 (from SC_LOCAL_SIZE) but no local rank" \
    "rank 2, its local size and the variable"
  ;;
duplicate_local_rank)
  on_host node0 SC_RANK=0 SC_WORLD_SIZE=2 SC_LOCAL_RANK=0
  on_host node0 SC_RANK=1 SC_WORLD_SIZE=2 SC_LOCAL_RANK=0
  wait_all
  every_rank_fails 2 "ranks 0 and 1 share the host node0 and both have local rank 0 (from SC_LOCAL_RANK)" \
    "both ranks, their local rank and the variable"
  ;;
duplicate_of_a_counted_local_rank)
  on_host node0 SC_RANK=0 SC_WORLD_SIZE=2 SC_LOCAL_RANK=1
  on_host node0 SC_RANK=1 SC_WORLD_SIZE=2
  wait_all
  every_rank_fails 2 "ranks 0 and 1 share the host node0 and both have local rank 1 (rank 0's from SC_LOCAL_RANK, rank 1's counted among the ranks of that host name: it was given none)" \
    "both ranks, their local rank and where each came from"
  ;;
two_launches_on_one_host)
  local_ids=(0 1 0 1)
  for r in 0 1 2 3; do
    on_host node0 SC_RANK=$r SC_WORLD_SIZE=4 SC_LOCAL_SIZE=2 SC_LOCAL_RANK=${local_ids[$r]}
  done
  wait_all
  for r in 0 1 2 3; do
    [[ $(cat "$logs/$r.rc") == 0 ]] || fail "rank $r failed"
  done
  ;;
slurm_counts_per_node | slurm_fewer_than_requested)
  nodes=(0 0 1)
  local_ids=(0 1 0)
  request=()
  [[ $mode == slurm_fewer_than_requested ]] && request=(SLURM_NTASKS_PER_NODE=2)
  for r in 0 1 2; do
    on_host node${nodes[$r]} SLURM_PROCID=$r SLURM_NTASKS=3 SLURM_LOCALID=${local_ids[$r]} \
      SLURM_NODEID=${nodes[$r]} SLURM_STEP_TASKS_PER_NODE=2,1 "${request[@]}"
  done
  wait_all
  for r in 0 1 2; do
    [[ $(cat "$logs/$r.rc") == 0 ]] || fail "rank $r failed"
  done
  grep -qF "communicator ready: rank 2 of 3, local rank 0 of 1" "$logs/2" ||
    fail "rank 2 is not alone on node1"
  for r in 0 1; do
    grep -qF "communicator ready: rank $r of 3, local rank $r of 2" "$logs/$r" ||
      fail "rank $r is not local rank $r of 2"
  done
  ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac
