#!/usr/bin/env bash
# Two ranks on a shaped link: two network namespaces (each with its own host name, so
# that shardcomm sees two nodes) joined by a veth pair whose both ends are shaped with
# tc (a token bucket filter) to RATE, one rank in each, UCX over TCP on the veth, then
# `sc-bench MODE ARGS` (default: compressed -n 25M --ratio 0.01). Needs root and iproute2
# (scripts/install-deps.sh installs it). The veth ends are made inside the namespaces;
# on exit, whatever happens (a second signal included), the script stops its ranks and
# removes the namespaces it made, never one of that name it found, and with them the
# veth pair and its qdiscs. The ranks run in a session of their own (setsid): a Ctrl-C
# reaches them once, forwarded by the script, not a second time from the terminal.
#
# usage: bench/netem/run_netem.sh [--rate RATE|none] [--mtu M] [--build DIR]
#                                 [--json FILE] [--mode MODE] [-- sc-bench args]
#   --rate RATE   tc rate of each direction (default 10gbit); none: no shaping
#   --mtu M       veth MTU (default 1500)
#   --build DIR   build directory holding tools/scrun and bench/sc-bench (default build)
#   --json FILE   passed to sc-bench (rank 0 writes it)
#   --mode MODE   the sc-bench mode (default compressed; e.g. reducer, allreduce)
# The ranks run in this directory: relative paths (--json, a reducer --profile) work.
# Exit status: sc-bench's; 2 for a usage error or a missing build; 130 on SIGINT, 143
# on SIGTERM.
set -euo pipefail

rate=10gbit
mtu=1500
build=build
mode=compressed
json=""
args=()
# A value-taking option at the end of the line is a usage error, not an unbound $2.
need_value() {
  [ "$1" -ge 2 ] || { echo "run_netem.sh: $2 needs a value (see --help)" >&2; exit 2; }
}
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) need_value $# "$1"; rate=$2; shift 2 ;;
    --mtu) need_value $# "$1"; mtu=$2; shift 2 ;;
    --build) need_value $# "$1"; build=$2; shift 2 ;;
    --json) need_value $# "$1"; json=$2; shift 2 ;;
    --mode) need_value $# "$1"; mode=$2; shift 2 ;;
    --) shift; args=("$@"); break ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "run_netem.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#args[@]} -gt 0 ] || [ "$mode" != compressed ] || args=(-n 25M --ratio 0.01)
[ -z "$json" ] || args+=(--json "$json")

[ -x "$build/tools/scrun" ] && [ -x "$build/bench/sc-bench" ] || {
  echo "run_netem.sh: $build/tools/scrun or $build/bench/sc-bench is missing; build first" >&2
  exit 2
}
scrun=$(realpath "$build/tools/scrun")
bench=$(realpath "$build/bench/sc-bench")
if [ "$(id -u)" -ne 0 ]; then
  echo "run_netem.sh: needs root (network namespaces and tc)" >&2
  exit 2
fi
for tool in ip tc unshare setsid; do
  command -v "$tool" >/dev/null || {
    echo "run_netem.sh: '$tool' not found; scripts/install-deps.sh installs iproute2" >&2
    exit 2
  }
done

addr=(10.77.0.1 10.77.0.2)
pids=()
made=()  # the namespaces this run made: the only ones cleanup removes
cleanup() {
  # A second signal must not cut the cleanup short (leaving the namespaces).
  trap '' INT TERM
  # Ranks still running (an interrupted run) go first: a namespace lives on while a
  # process is inside it. All the background jobs: a rank started just before the
  # signal may not be in pids yet (and its own session keeps the Ctrl-C from it).
  for p in $(jobs -p); do
    kill "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  for n in "${made[@]}"; do
    ip netns del "$n" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ns_add NAME: makes the namespace NAME; fails when one of that name is there. The name
# is recorded before it is made (a signal between the two would leave it otherwise), and
# only once no namespace of that name was found.
ns_add() {
  [ ! -e "/run/netns/$1" ] || return 1
  made+=("$1")
  ip netns add "$1" 2>/dev/null || { unset 'made[-1]'; return 1; }
}
# A tag no namespace has: the pid and a random number, drawn again while taken.
for try in 1 2 3 4 5 6 7 8; do
  tag=$$-$RANDOM
  ns=(scnetem0-$tag scnetem1-$tag)
  if ns_add "${ns[0]}"; then
    ns_add "${ns[1]}" && break
    ip netns del "${ns[0]}"
    unset 'made[-1]'
  fi
  [ "$try" -lt 8 ] || { echo "run_netem.sh: no free namespace name scnetem0-$$-N" >&2; exit 1; }
done
# The ends live in the namespaces only, so their names need not be unique on the host
# (the pid keeps them apart in the output).
dev=(scv0-$$ scv1-$$)
port=$((20000 + $$ % 20000))

# Each end is made in its namespace: none is ever in the root namespace, where a signal
# between making the pair and moving it left the pair behind.
ip link add "${dev[0]}" netns "${ns[0]}" type veth peer name "${dev[1]}" netns "${ns[1]}"
for i in 0 1; do
  ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev "${dev[$i]}"
  ip -n "${ns[$i]}" link set "${dev[$i]}" mtu "$mtu" up
  ip -n "${ns[$i]}" link set lo up
  if [ "$rate" != none ]; then
    # The bucket holds a few 64 KiB segments (veth passes TCP's large segments whole);
    # the queue holds 20 ms at the rate, far more than a TCP window on this link.
    ip netns exec "${ns[$i]}" tc qdisc add dev "${dev[$i]}" root tbf rate "$rate" \
      burst 256kb latency 20ms
  fi
done
# A new link's carrier comes up to a second late (the kernel's linkwatch) and UCX takes
# a device that is not yet running for absent: wait for both ends, 5 s at most.
for t in $(seq 50); do
  ip -n "${ns[0]}" -o link show dev "${dev[0]}" | grep -q 'state UP' &&
    ip -n "${ns[1]}" -o link show dev "${dev[1]}" | grep -q 'state UP' && break
  sleep 0.1
done
echo "# link: veth ${dev[0]} <-> ${dev[1]}, rate $rate, mtu $mtu"
for i in 0 1; do
  ip netns exec "${ns[$i]}" tc qdisc show dev "${dev[$i]}" | sed 's/^/# /'
done

for i in 0 1; do
  setsid ip netns exec "${ns[$i]}" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
    "scnode$i" env UCX_TLS=tcp,self UCX_NET_DEVICES="${dev[$i]}" \
    "$scrun" -n 1 --nnodes 2 --node-rank "$i" --master-addr "${addr[0]}" \
    --master-port "$port" "$bench" "$mode" "${args[@]}" &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do
  wait "$p" || status=$?
done
# What crossed the link: proof that the ranks talked over the veth, not shared memory.
for i in 0 1; do
  echo "# ${dev[$i]} sent $(ip netns exec "${ns[$i]}" cat "/sys/class/net/${dev[$i]}/statistics/tx_bytes") bytes"
done
exit "$status"
