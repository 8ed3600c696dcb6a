#!/usr/bin/env bash
# A program started the way torchrun starts it forms its communicator from torchrun's
# variables, with no SC_* variable and no scrun: sc-bench checks its results on 2 ranks.
# Its rendezvous takes the port after MASTER_PORT, which is torch.distributed's.
# Usage: torchrun_env_test.sh SC_BENCH [MODE [LIBSHARDCOMM_SO]], under
# with_reserved_port.py MASTER_PORT (tests/launch/CMakeLists.txt).
#   plain        RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
#                set by hand (the default)
#   agent-store  the same, with torchrun's default (static) rendezvous as its agent leaves
#                it: the agent's store listening on MASTER_PORT for the whole run
#                (TORCHELASTIC_USE_AGENT_STORE=True). It failed with "rank 0 could not
#                serve the rendezvous on port ..."
#   torchrun     torchrun itself
#   torch-first  a Python program that calls torch.distributed.init_process_group (gloo)
#                and then sc_comm_init_from_env (ctypes) on each rank: rank 0's torch
#                store holds MASTER_PORT. Rank 0 failed at once, rank 1 after SC_TIMEOUT
#   (the last two need Debian's python3-torch in /usr/bin/python3; skipped without it)
set -u
bench=$1
mode=${2:-plain}
port=${MASTER_PORT:?run under with_reserved_port.py MASTER_PORT}
lib=${3:-}
logs=$(mktemp -d)
agent=
cleanup() {
  [ -n "$agent" ] && kill "$agent" 2>/dev/null
  rm -rf "$logs"
}
trap cleanup EXIT
unset SC_RANK SC_WORLD_SIZE SC_LOCAL_RANK SC_LOCAL_SIZE SC_MASTER_ADDR SC_MASTER_PORT \
      TORCHELASTIC_USE_AGENT_STORE
export SC_TIMEOUT=20
args=(allreduce -b 8 -e 1M -f 16 -n 2 -w 1 -c 1)
needs_torch() {
  /usr/bin/python3 -c 'import torch.distributed.run' 2>/dev/null && return 0
  echo "SKIP: /usr/bin/python3 has no torch (apt-get install python3-torch)"
  exit 77
}

case $mode in
plain) ;;
agent-store)
  # The agent's store: listening on MASTER_PORT (beside the reservation) until killed.
  python3 -c 'import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(8)
open(sys.argv[2], "w").close()
time.sleep(600)' "$port" "$logs/listening" &
  agent=$!
  for _ in $(seq 100); do [ -e "$logs/listening" ] && break; sleep 0.1; done
  [ -e "$logs/listening" ] || { echo "FAIL: the stand-in agent store did not start"; exit 1; }
  export TORCHELASTIC_USE_AGENT_STORE=True
  ;;
torchrun)
  needs_torch
  # --redirects/--tee 2: Debian's torch 1.13 on Python 3.11 fails on its default of 0.
  # --monitor_interval: the agent looks at its workers every 5 s by default, so the run
  # ended up to 5 s after the ranks had (7.2 s of wall time on 2.2 s of CPU).
  timeout 120 /usr/bin/python3 -m torch.distributed.run --nproc_per_node 2 \
    --master_port "$port" --monitor_interval 0.1 --redirects 2 --tee 2 --no_python \
    "$bench" "${args[@]}" >"$logs/out" 2>&1
  rc=$?
  [ $rc -eq 0 ] && grep -q '# avg busbw: .*, wrong: 0$' "$logs/out" ||
    { echo "FAIL: torchrun exit status $rc:"; cat "$logs/out"; exit 1; }
  grep -h "avg busbw" "$logs/out"
  exit 0
  ;;
torch-first)
  needs_torch
  bench=/usr/bin/python3
  args=(-c 'import ctypes, sys
import torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
lib = ctypes.CDLL(sys.argv[1])
lib.sc_last_error.restype = ctypes.c_char_p
comm = ctypes.c_void_p()
st = lib.sc_comm_init_from_env(ctypes.byref(comm))
if st != 0:
    sys.exit("sc_comm_init_from_env: %d: %s" % (st, lib.sc_last_error().decode()))
x = (ctypes.c_float * 4)(1, 2, 3, 4)
st = lib.sc_allreduce(x, x, ctypes.c_size_t(4), 0, 0, comm, None, None)
if st != 0 or list(x) != [2, 4, 6, 8]:
    sys.exit("sc_allreduce: %d: %s" % (st, list(x)))
lib.sc_comm_destroy(comm)
dist.destroy_process_group()
print("# avg busbw: torch first, then shardcomm: sum right")' "$lib")
  ;;
*)
  echo "unknown mode $mode"
  exit 1
  ;;
esac

pids=()
for r in 0 1; do
  env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port timeout 120 "$bench" "${args[@]}" >"$logs/rank$r" 2>&1 &
  pids+=($!)
done
rc=0
for i in 0 1; do
  wait "${pids[$i]}" || { echo "FAIL: rank $i:"; cat "$logs/rank$i"; rc=1; }
done
[ $rc -eq 0 ] && grep -h "avg busbw" "$logs/rank0"
exit $rc
