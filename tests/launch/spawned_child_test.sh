#!/usr/bin/env bash
# A program a rank starts during the rendezvous (fork and exec) inherits none of the
# store's sockets: were it to hold one, the connection of a rank that exited or was
# killed would stay open on the store's side, or rank 0's store would not be seen to go.
# Usage: spawned_child_test.sh SC_INFO SPAWNING_RANK, under with_reserved_port.py
# SC_MASTER_PORT. Rank 0 (spawning_rank) starts `sleep` once rank 1 reached its store and
# before rank 2 is started; the sleep's descriptors must hold no TCP socket on the master
# port (the store's accepted connections), and the world of 3 forms.
set -u
sc_info=$1
spawning_rank=$2
: "${SC_MASTER_PORT:?run under with_reserved_port.py SC_MASTER_PORT}"
. "$(dirname "$0")/launch_env.sh"
export SC_BIND=none SC_MASTER_ADDR=127.0.0.1 SC_LOG_LEVEL=info SC_TIMEOUT=20 SC_WORLD_SIZE=3
logs=$(mktemp -d)
pids=()
child=
trap 'kill -9 "${pids[@]}" $child 2>/dev/null; wait 2>/dev/null; rm -rf "$logs"' EXIT

fail() {
  echo "FAIL: $*"
  for f in "$logs"/*; do echo "--- rank ${f##*/}:"; grep -v '^#' "$f" | tail -4; done
  exit 1
}

# The sockets of process PID whose local port is the master port (IPv4 or IPv6).
store_sockets() {
  local port inode found=
  port=$(printf '%04X' "$SC_MASTER_PORT")
  for fd in /proc/"$1"/fd/*; do
    inode=$(readlink "$fd" 2>/dev/null) || continue
    [[ $inode == socket:\[*\] ]] || continue
    inode=${inode#socket:[}
    inode=${inode%]}
    awk -v i="$inode" -v p=":$port" '$10 == i && substr($2, length($2) - 4) == p { f = 1 }
      END { exit !f }' /proc/net/tcp /proc/net/tcp6 && found+=" ${fd##*/}"
  done
  echo "$found"
}

SC_RANK=0 SC_LOCAL_RANK=0 "$spawning_rank" >"$logs/0" 2>&1 &
pids[0]=$!
SC_RANK=1 SC_LOCAL_RANK=1 "$sc_info" --transports >"$logs/1" 2>&1 &
pids[1]=$!
wait_for 20 grep -q "rank 1 listens on port" "$logs/1" || fail "rank 1 never came to the store"
sleep 0.5 # its hello follows at once; the store holds its connection until rank 2 comes
kill -USR1 "${pids[0]}"
wait_for 10 grep -q "^spawned" "$logs/0" || fail "rank 0 did not start its program"
child=$(sed -n 's/^spawned \([0-9]*\)$/\1/p' "$logs/0")
held=$(store_sockets "$child")
[[ -z $held ]] || fail "the program rank 0 started holds the store's sockets (fd$held)"
SC_RANK=2 SC_LOCAL_RANK=2 "$sc_info" --transports >"$logs/2" 2>&1 &
pids[2]=$!
for r in 0 1 2; do
  wait "${pids[$r]}" || fail "rank $r failed"
done
grep -q "^formed" "$logs/0" || fail "rank 0 did not form the world"
echo "ok"
