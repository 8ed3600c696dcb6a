#!/usr/bin/env bash
# train_data_parallel's error line for a failed call, on one rank: a sentence that names
# the call already is printed once ("sc_comm_hook_topk: sc_comm_hook_topk: config.density
# ..." before), and one that does not follows the call's name.
# Usage: failed_call_once_test.sh TRAIN_DATA_PARALLEL
prog=$1
check() { # expected line, then the environment and the arguments
  local want=$1 got
  shift
  got=$(env -u SC_RANK -u SC_WORLD_SIZE "$@" 2>&1 >/dev/null)
  [ "$got" = "$want" ] || { echo "FAIL: $*: printed '$got', expected '$want'"; exit 1; }
}
line="train_data_parallel: sc_comm_hook_topk: config.density is 2; it must be in (0, 1]"
check "$line (or 0 for 0.01)" "$prog" --topk 2
line="train_data_parallel: sc_comm_init_from_env: rank 0: SC_ALGO=bogus is not one of"
check "$line auto|ring|rd" SC_ALGO=bogus "$prog"
echo "failed call once test: both error lines name the call once"
