#!/usr/bin/env bash
# sc_info_print_config after an sc_comm_init of ranks on several nodes, in the same
# process: `sc-info --config --transports` makes the communicator first. Two ranks whose
# local size is left to the rendezvous, which sc_comm_init takes for several nodes and
# sets UCX_TCP_CONN_NB=y in its environment for. Usage: config_after_init_test.sh
# SC_INFO MODE, under with_reserved_port.py SC_MASTER_PORT.
#   set_by_init  UCX_TCP_CONN_NB unset: each rank's report says sc_comm_init set y, as
#                shardcomm's default (it said "y UCX_TCP_CONN_NB", as if the user had)
#   set_by_user  UCX_TCP_CONN_NB=y set by the user: the report says the variable gave it
set -u
sc_info=$1
mode=$2
: "${SC_MASTER_PORT:?run under with_reserved_port.py SC_MASTER_PORT}"
. "$(dirname "$0")/launch_env.sh"
unset UCX_TLS UCX_TCP_CONN_NB
export SC_TIMEOUT=20 SC_BIND=none SC_WORLD_SIZE=2 SC_MASTER_ADDR=127.0.0.1
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

case $mode in
set_by_init) source="shardcomm.s default, set in this process.s environment by sc_comm_init" ;;
set_by_user) export UCX_TCP_CONN_NB=y source=UCX_TCP_CONN_NB ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac

pids=()
for r in 0 1; do
  SC_RANK=$r "$sc_info" --config --transports >"$logs/$r" 2>&1 &
  pids+=($!)
done
rc=0
for r in 0 1; do
  wait "${pids[$r]}" || { echo "FAIL $mode: rank $r exited with status $?"; rc=1; }
  grep -Eq "^  UCX_TCP_CONN_NB +=  *y +$source\$" "$logs/$r" || {
    echo "FAIL $mode: rank $r does not show UCX_TCP_CONN_NB = y from '$source'"
    rc=1
  }
  ((rc == 0)) || { echo "--- rank $r:"; cat "$logs/$r"; }
done
exit $rc
