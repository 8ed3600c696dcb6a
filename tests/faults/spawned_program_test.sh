#!/usr/bin/env bash
# spawned_program_test.sh PROG TRANSPORTS, under with_reserved_port.py SC_MASTER_PORT:
# two ranks of PROG's killed_rank_with_a_spawned_program_fails_its_peer_at_once, each in
# a UTS namespace of its own (two host names, so the library sees two nodes: no pid check
# between them, UCX's connections alone say rank 1 died), started directly as a launcher
# that leaves a dead rank's children alone does (scrun would stop its process group).
# TRANSPORTS is tcp (UCX_TLS=tcp,self) or default (UCX_TLS unset). Rank 1 must be killed
# by SIGKILL and rank 0 pass (its allreduce failed within 3 s with SC_TIMEOUT=20). Needs
# root for the namespaces, unshare(1) and hostname(1) that name one, and kcmp (the
# library finds UCX's descriptors with it): exits 77 (skipped, saying why) without.
set -u
prog=$1 transports=$2
: "${SC_MASTER_PORT:?run under with_reserved_port.py SC_MASTER_PORT}"
. "$(dirname "$0")/../launch/launch_env.sh"
dir=$(mktemp -d)
pids=()
trap 'kill -9 "${pids[@]}" $(cat "$dir/spawned" 2>/dev/null) 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) == 0 ]] || skip "UTS namespaces need root"
# What each rank is started with below, so that a host that cannot do it skips.
unshare --uts sh -c 'hostname scspawnprobe' >/dev/null 2>&1 ||
  skip "cannot name a UTS namespace of its own here (unshare --uts, hostname)"
SC_RANK=0 "$prog" kcmp_is_allowed >/dev/null 2>&1 ||
  skip "kcmp is refused here: the library leaves UCX's descriptors inheritable"
case $transports in
tcp) export UCX_TLS=tcp,self ;;
default) unset UCX_TLS ;;
*) echo "usage: $0 PROG tcp|default" >&2; exit 2 ;;
esac
export FAULT_DIR=$dir SC_BIND=none SC_MASTER_ADDR=127.0.0.1 SC_TIMEOUT=20 SC_WORLD_SIZE=2 \
    SC_LOCAL_SIZE=1 SC_LOCAL_RANK=0

fail() {
  echo "FAIL: $*"
  for r in 0 1; do echo "--- rank $r:"; tail -5 "$dir/$r"; done
  exit 1
}

for r in 0 1; do
  SC_RANK=$r unshare --uts sh -c 'hostname "$0" && exec "$@"' "scspawnnode$r" \
    "$prog" killed_rank_with_a_spawned_program_fails_its_peer_at_once >"$dir/$r" 2>&1 &
  pids[r]=$!
done
wait "${pids[1]}" 2>/dev/null # bash's own "Killed" line
rc1=$?
wait "${pids[0]}"
rc0=$?
[[ $rc1 == 137 ]] || fail "rank 1 exited with $rc1, expected 137 (SIGKILL)"
[[ -s $dir/spawned ]] || fail "rank 1 did not start its program"
[[ $rc0 == 0 ]] || fail "rank 0 exited with $rc0"
grep -qxF "PASS: killed_rank_with_a_spawned_program_fails_its_peer_at_once (rank 0)" "$dir/0" ||
  fail "rank 0 did not pass"
grep -F "the allreduce failed after" "$dir/0"
echo "ok"
