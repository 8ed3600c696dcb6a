#!/usr/bin/env bash
# Two nodes in two network namespaces (each its own UTS name, so shardcomm sees two
# hosts), joined by a veth pair shaped to 200 Mbit/s with tbf, one rank each through
# scrun's multi-node mode over UCX's TCP transport; FAULT (abort | linkdown |
# rendezvous_death) is what test_netfault checks; rendezvous_death runs two ranks per
# node, with a longer timeout (the rendezvous is held open 2 s). clean_exit (PROG is
# test_netexit) runs two ranks per node with UCX_TLS unset, UCX's default (shared memory
# and TCP between the ranks of a node), and fails where any rank printed a UCX warning or
# error. Needs root and iproute2: exits 77 (skipped, saying why) without them. Cleans up
# its namespaces on every exit.
# usage: netfault_test.sh SCRUN PROG FAULT
set -uo pipefail
scrun=$1 prog=$2 fault=$3
tag=$$
ns=(scnf0-$tag scnf1-$tag) dev=(scnfv0-$tag scnfv1-$tag) addr=(10.78.0.1 10.78.0.2)
port=$((30000 + tag % 20000))
out=$(mktemp -d)
cleanup() {
  for n in "${ns[@]}"; do
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
  done
  wait 2>/dev/null
  for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null; done
  ip link del "${dev[0]}" 2>/dev/null
  rm -rf "$out"
}
trap cleanup EXIT
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip >/dev/null && command -v tc >/dev/null || skip "iproute2 (ip, tc) is not installed"
command -v unshare >/dev/null || skip "unshare is not installed"
ip netns add "${ns[0]}" 2>/dev/null && ip netns add "${ns[1]}" 2>/dev/null ||
  skip "cannot create network namespaces here"
ip link add "${dev[0]}" type veth peer name "${dev[1]}" 2>/dev/null || skip "no veth support"
for i in 0 1; do
  ip link set "${dev[$i]}" netns "${ns[$i]}" &&
    ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev "${dev[$i]}" &&
    ip -n "${ns[$i]}" link set "${dev[$i]}" up && ip -n "${ns[$i]}" link set lo up &&
    ip netns exec "${ns[$i]}" tc qdisc add dev "${dev[$i]}" root tbf rate 200mbit burst 32kb \
      latency 400ms || skip "cannot set up the veth pair (tbf)"
done
nproc=1 timeout=2 tls=(UCX_TLS=tcp,self)
[ "$fault" != rendezvous_death ] || nproc=2 timeout=5
[ "$fault" != clean_exit ] || nproc=2 tls=(-u UCX_TLS)
pids=()
for i in 0 1; do
  ip netns exec "${ns[$i]}" unshare --uts sh -c 'hostname "$0" && exec "$@"' "scnfnode$i" \
    env "${tls[@]}" SC_TIMEOUT=$timeout SC_BIND=none UCX_NET_DEVICES="${dev[$i]}" \
    timeout 60 "$scrun" -n $nproc --nnodes 2 --node-rank "$i" --master-addr "${addr[0]}" \
    --master-port "$port" "$prog" "$fault" > "$out/node$i.log" 2>&1 &
  pids+=($!)
done
# The link goes down 1 s into the allreduce (64 MiB at 200 Mbit/s: about 3 s), once
# both ranks said they issued it. A fixed 1.5 s from the start (init, then 1 s) took
# it down in the middle of the rendezvous where init took longer (a loaded machine).
if [ "$fault" = linkdown ]; then
  for _ in $(seq 300); do
    grep -q '^\[0\] rank 0: the allreduce is issued$' "$out/node0.log" &&
      grep -q '^\[1\] rank 1: the allreduce is issued$' "$out/node1.log" && break
    sleep 0.1
  done
  sleep 1
  ip -n "${ns[0]}" link set "${dev[0]}" down
fi
rc=0
for i in 0 1; do
  wait "${pids[$i]}"; r=$?
  echo "== node $i (scrun exit $r)"; cat "$out/node$i.log"
  [ "$r" = 0 ] || rc=1
done
if [ "$fault" = clean_exit ] && grep -qE 'UCX +(WARN|ERROR)' "$out"/node*.log; then
  echo "FAIL: clean_exit: a rank printed a UCX warning or error:"
  grep -hE 'UCX +(WARN|ERROR)' "$out"/node*.log
  rc=1
fi
exit $rc
