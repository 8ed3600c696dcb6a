#!/usr/bin/env bash
# A program started the way torchrun starts it (RANK, WORLD_SIZE, LOCAL_RANK,
# LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; no SC_* variable, no scrun) forms its
# communicator from those variables: sc-bench checks its results on 2 ranks. The port
# comes from MASTER_PORT, set by with_reserved_port.py (tests/launch/CMakeLists.txt).
set -u
bench=$1
port=${MASTER_PORT:?run under with_reserved_port.py MASTER_PORT}
pids=()
for r in 0 1; do
  env -u SC_RANK -u SC_WORLD_SIZE -u SC_LOCAL_RANK -u SC_LOCAL_SIZE -u SC_MASTER_ADDR \
      -u SC_MASTER_PORT -u TORCHELASTIC_USE_AGENT_STORE RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SC_TIMEOUT=20 \
      "$bench" allreduce -b 8 -e 1M -f 16 -n 2 -w 1 -c 1 >"/tmp/torchrun_env_$$_$r.log" 2>&1 &
  pids+=($!)
done
rc=0
for i in 0 1; do
  wait "${pids[$i]}" || { echo "rank $i failed:"; cat "/tmp/torchrun_env_$$_$i.log"; rc=1; }
done
grep -h "avg busbw" "/tmp/torchrun_env_$$_0.log"
rm -f /tmp/torchrun_env_$$_*.log
exit $rc
