# Sourced by the tests that reach a launch's store while it waits for a rank, with their
# arguments SCRUN SC_BENCH MODE (as scrun, bench and mode), under with_reserved_port.py
# SC_MASTER_PORT (as port); it clears the launchers' variables (launch_env.sh) and makes
# logs, a folder removed at exit. start_waiting_launch starts launch A in the background, `scrun -n 2` of sc-bench
# (allreduce, results checked) whose rank 1 starts 4 s late, and returns once A's store
# listens; check_waiting_launch waits for A and calls the test's fail unless A completed
# with its 2 ranks and right results. A's output is $logs/a.
# $late, a script for bash -c: rank $1 sleeps $2 s, then runs the rest.
late='r=$1 s=$2; shift 2; [ "$SC_RANK" = "$r" ] && sleep "$s"; exec "$@"'
scrun=$1
bench=$2
mode=$3
port=${SC_MASTER_PORT:?run under with_reserved_port.py SC_MASTER_PORT}
. "$(dirname "$0")/launch_env.sh"
logs=$(mktemp -d)
a=
trap '[ -n "$a" ] && kill "$a" 2>/dev/null; rm -rf "$logs"' EXIT

start_waiting_launch() {
  SC_TIMEOUT=20 SC_BIND=none "$scrun" -n 2 --master-port "$port" -- \
    bash -c "$late" late 1 4 "$bench" allreduce -b 8 -e 1K -f 2 -n 2 -w 1 -c 1 \
    >"$logs/a" 2>&1 &
  a=$!
  for _ in $(seq 100); do
    ss -Hltn "sport = :$port" | grep -q . && return 0
    sleep 0.05
  done
  echo "launch A's store did not listen:"
  cat "$logs/a"
  exit 1
}

check_waiting_launch() {
  local rc
  wait "$a"
  rc=$?
  a=
  ((rc == 0)) || fail "launch A failed (exit status $rc)"
  grep -q "nranks 2" "$logs/a" && grep -q "wrong: 0" "$logs/a" ||
    fail "launch A did not run its 2 ranks with right results"
}
