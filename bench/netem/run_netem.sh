#!/usr/bin/env bash
# Two ranks on a shaped link: two network namespaces (each with its own host name, so
# that shardcomm sees two nodes) joined by a veth pair whose both ends are shaped with
# tc (a token bucket filter) to RATE, one rank in each, UCX over TCP on the veth, then
# `sc-bench MODE ARGS` (default: compressed -n 25M --ratio 0.01). Needs root and iproute2
# (scripts/install-deps.sh installs it). Removes the namespaces, and with them the
# veth pair and its qdiscs, on exit, whatever happens.
#
# usage: bench/netem/run_netem.sh [--rate RATE|none] [--mtu M] [--build DIR]
#                                 [--json FILE] [--mode MODE] [-- sc-bench args]
#   --rate RATE   tc rate of each direction (default 10gbit); none: no shaping
#   --mtu M       veth MTU (default 1500)
#   --build DIR   build directory holding tools/scrun and bench/sc-bench (default build)
#   --json FILE   passed to sc-bench (rank 0 writes it)
#   --mode MODE   the sc-bench mode (default compressed; e.g. reducer, allreduce)
# The ranks run in this directory: relative paths (--json, a reducer --profile) work.
# Exit status: sc-bench's; 2 for a usage error or a missing build.
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
for tool in ip tc unshare; do
  command -v "$tool" >/dev/null || {
    echo "run_netem.sh: '$tool' not found; scripts/install-deps.sh installs iproute2" >&2
    exit 2
  }
done

tag=$$
ns=(scnetem0-$tag scnetem1-$tag)
dev=(scv0-$tag scv1-$tag)
addr=(10.77.0.1 10.77.0.2)
port=$((20000 + tag % 20000))

pids=()
cleanup() {
  # Ranks still running (an interrupted run) go first: a namespace lives on while a
  # process is inside it.
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  for n in "${ns[@]}"; do
    ip netns del "$n" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for i in 0 1; do
  ip netns add "${ns[$i]}"
done
ip link add "${dev[0]}" type veth peer name "${dev[1]}"
for i in 0 1; do
  ip link set "${dev[$i]}" netns "${ns[$i]}"
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
echo "# link: veth ${dev[0]} <-> ${dev[1]}, rate $rate, mtu $mtu"
for i in 0 1; do
  ip netns exec "${ns[$i]}" tc qdisc show dev "${dev[$i]}" | sed 's/^/# /'
done

for i in 0 1; do
  ip netns exec "${ns[$i]}" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
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
