#!/usr/bin/env bash
# Behaviour tests of scrun: scrun_test.sh SCRUN BIND_PORT TEST runs the function test_TEST
# (BIND_PORT: the bind_port helper).
# Each test runs scrun on rank.sh and checks its exit status, output and timing.
set -u

SCRUN=$1
BIND_PORT=$2
TEST=$3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RANK="$HERE/rank.sh"
SCRUN_TEST_DIR=$(mktemp -d)
export SCRUN_TEST_DIR
BG_PID= # a scrun started in the background, killed if the test stops early
trap '[[ -n $BG_PID ]] && kill -KILL $BG_PID 2>/dev/null; rm -rf "$SCRUN_TEST_DIR"' EXIT
OUT=$SCRUN_TEST_DIR/stdout
ERR=$SCRUN_TEST_DIR/stderr
# Each test sets what it needs; values from the caller's environment must not leak in.
unset SC_RANK SC_WORLD_SIZE SC_LOCAL_RANK SC_LOCAL_SIZE SC_NODE_RANK SC_MASTER_ADDR \
      SC_MASTER_PORT SC_BIND MASTER_PORT

fail() {
    echo "FAIL $TEST: $*" >&2
    echo "--- scrun stdout:" >&2
    cat "$OUT" >&2 2>/dev/null
    echo "--- scrun stderr:" >&2
    cat "$ERR" >&2 2>/dev/null
    exit 1
}

# Seconds from T0 (an $EPOCHREALTIME) until now.
seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }

# run ARGS...: runs scrun with stdin from /dev/null; sets $rc, $elapsed (seconds) and
# $ended (an $EPOCHREALTIME).
run() {
    local t0=$EPOCHREALTIME
    "$SCRUN" "$@" </dev/null >"$OUT" 2>"$ERR"
    rc=$?
    ended=$EPOCHREALTIME
    elapsed=$(seconds_since "$t0")
}

# Sets $elapsed to the seconds from the moment a rank of rank.sh failed (its failed_at)
# to the end of the last run: scrun's reaction alone. Measured from scrun's start, it
# included starting the ranks and their waits for each other, which a loaded machine
# (ctest -j2 beside sanitizer builds) stretches by seconds.
elapsed_since_failure() {
    [[ -s $SCRUN_TEST_DIR/failed_at ]] || fail "no rank recorded its failure"
    elapsed=$(awk -v a="$(cat "$SCRUN_TEST_DIR/failed_at")" -v b="$ended" \
                  'BEGIN { printf "%.3f", b - a }')
}

# start_bg ARGS...: runs scrun in the background with stdin from /dev/null ($BG_PID).
start_bg() {
    "$SCRUN" "$@" </dev/null >"$OUT" 2>"$ERR" &
    BG_PID=$!
}

# wait_bg LIMIT T0: waits up to LIMIT s until the scrun of start_bg has ended; sets $rc,
# and $elapsed from T0 (an $EPOCHREALTIME) to its end.
wait_bg() {
    local deadline=$((SECONDS + $1))
    while kill -0 $BG_PID 2>/dev/null &&
          [[ $(awk '{ print $3 }' /proc/$BG_PID/stat 2>/dev/null) != Z ]]; do
        ((SECONDS < deadline)) || fail "scrun still runs after $1 s"
        sleep 0.02
    done
    elapsed=$(seconds_since "$2")
    wait $BG_PID
    rc=$?
    BG_PID=
}

# wait_for_match FILE REGEX: waits up to 10 s until a line of FILE matches REGEX.
wait_for_match() {
    local deadline=$((SECONDS + 10))
    until grep -qE -- "$2" "$1"; do
        ((SECONDS < deadline)) || fail "no line of $1 matches '$2' after 10 s"
        sleep 0.02
    done
}

expect_rc() { [[ $rc == "$1" ]] || fail "exit status $rc, expected $1"; }

# expect_file FILE LINE...: FILE holds exactly these lines, in this order.
expect_file() {
    local file=$1
    shift
    local expected
    expected=$(printf '%s\n' "$@")
    [[ $(cat "$file") == "$expected" ]] || fail "$file differs from the expected lines:
$expected"
}

expect_line() { grep -qxF -- "$2" "$1" || fail "no line '$2' in $1"; }
expect_no_match() { ! grep -qE -- "$2" "$1" || fail "a line of $1 matches '$2'"; }
expect_elapsed_below() {
    awk -v e="$elapsed" -v m="$1" 'BEGIN { exit !(e < m) }' || fail "took ${elapsed}s, not < $1 s"
}
expect_elapsed_at_least() {
    awk -v e="$elapsed" -v m="$1" 'BEGIN { exit !(e >= m) }' || fail "took ${elapsed}s, not >= $1 s"
}

# Only rank R's lines of FILE, in their order.
lines_of_rank() { grep -F -- "[$2] " "$1"; }

test_env_is_set_for_every_rank() {
    run -n 4 bash "$RANK" env
    expect_rc 0
    local port
    port=$(sed -n 's/.* port=\([0-9]*\) .*/\1/p' "$OUT" | head -n 1)
    if [[ -z $port ]] || ((port < 1 || port > 65535)); then
        fail "no port in 1..65535: '$port'"
    fi
    local r lines=()
    for r in 0 1 2 3; do
        lines+=("[$r] rank=$r world=4 local_rank=$r local_size=4 node_rank=0 addr=127.0.0.1 port=$port bind=core")
    done
    sort "$OUT" > "$SCRUN_TEST_DIR/sorted"
    expect_file "$SCRUN_TEST_DIR/sorted" "${lines[@]}"
}

test_free_port_is_bindable() {
    run -n 1 bash "$RANK" env
    expect_rc 0
    local port
    port=$(sed -n 's/.* port=\([0-9]*\) .*/\1/p' "$OUT")
    "$BIND_PORT" "$port" || fail "port $port picked by scrun cannot be bound on 127.0.0.1"
}

# While the run lasts, the port scrun chose is reserved: another scrun's probe (a bind
# without SO_REUSEADDR) fails, the rank serving the store binds and listens on it.
test_chosen_port_is_reserved_for_the_run() {
    run -n 1 bash -c '"$1" "$SC_MASTER_PORT" 2>/dev/null && echo "probe bound $SC_MASTER_PORT"
                      "$1" --as-rank-0 "$SC_MASTER_PORT" && echo "rank 0 listened"' _ "$BIND_PORT"
    expect_rc 0
    expect_file "$OUT" "[0] rank 0 listened"
}

test_multi_node_ranks_are_offset_by_node() {
    run -n 2 --nnodes 3 --node-rank 2 --master-addr 10.1.2.3 bash "$RANK" env
    expect_rc 0
    sort "$OUT" > "$SCRUN_TEST_DIR/sorted"
    expect_file "$SCRUN_TEST_DIR/sorted" \
        "[4] rank=4 world=6 local_rank=0 local_size=2 node_rank=2 addr=10.1.2.3 port=29501 bind=core" \
        "[5] rank=5 world=6 local_rank=1 local_size=2 node_rank=2 addr=10.1.2.3 port=29501 bind=core"
}

# Beside torch.distributed: its store holds MASTER_PORT (29500 by default), so the
# rendezvous of several nodes takes the port after it, as the library does without
# scrun (it took 29500, torch's). --master-port and SC_MASTER_PORT still win.
test_multi_node_port_is_the_one_after_torchs_master_port() {
    MASTER_PORT=40000 run -n 1 --nnodes 2 --node-rank 1 --master-addr h bash "$RANK" env
    expect_rc 0
    expect_file "$OUT" \
        "[1] rank=1 world=2 local_rank=0 local_size=1 node_rank=1 addr=h port=40001 bind=core"
    MASTER_PORT=40000 SC_MASTER_PORT=5555 run -n 1 --nnodes 2 --master-addr h bash "$RANK" env
    expect_rc 0
    expect_file "$OUT" \
        "[0] rank=0 world=2 local_rank=0 local_size=1 node_rank=0 addr=h port=5555 bind=core"
}
test_usage_multi_node_master_port_without_a_port_after_it() {
    MASTER_PORT=65535 expect_usage_error -n 1 --nnodes 2 --master-addr h bash "$RANK" touch \
        "$SCRUN_TEST_DIR/started"
    expect_line "$ERR" "scrun: MASTER_PORT=65535 is torch.distributed's store and no port follows it for shardcomm's rendezvous: set --master-port or SC_MASTER_PORT"
    MASTER_PORT=x expect_usage_error -n 1 --nnodes 2 --master-addr h bash "$RANK" touch \
        "$SCRUN_TEST_DIR/started"
}

# The bind mode in any case, as the library takes SC_BIND (--bind NONE was refused).
test_bind_mode_is_case_insensitive() {
    run -n 1 --master-port 4321 --bind NONE bash "$RANK" env
    expect_rc 0
    expect_file "$OUT" \
        "[0] rank=0 world=1 local_rank=0 local_size=1 node_rank=0 addr=127.0.0.1 port=4321 bind=none"
    SC_BIND=Core run -n 1 --master-port 4321 bash "$RANK" env
    expect_rc 0
    expect_file "$OUT" \
        "[0] rank=0 world=1 local_rank=0 local_size=1 node_rank=0 addr=127.0.0.1 port=4321 bind=core"
}

test_flags_set_master_port_and_bind() {
    run -n 1 --master-port 4321 --bind none bash "$RANK" env
    expect_rc 0
    expect_file "$OUT" \
        "[0] rank=0 world=1 local_rank=0 local_size=1 node_rank=0 addr=127.0.0.1 port=4321 bind=none"
}

test_rendezvous_from_environment_is_kept() {
    SC_MASTER_ADDR=192.0.2.7 SC_MASTER_PORT=5555 SC_BIND=none run -n 1 bash "$RANK" env
    expect_rc 0
    expect_file "$OUT" \
        "[0] rank=0 world=1 local_rank=0 local_size=1 node_rank=0 addr=192.0.2.7 port=5555 bind=none"
}

test_other_environment_is_kept() {
    SCRUN_TEST_VALUE="a b" run -n 2 bash "$RANK" getenv SCRUN_TEST_VALUE
    expect_rc 0
    sort "$OUT" > "$SCRUN_TEST_DIR/sorted"
    expect_file "$SCRUN_TEST_DIR/sorted" "[0] SCRUN_TEST_VALUE=a b" "[1] SCRUN_TEST_VALUE=a b"
}

test_output_lines_are_prefixed_with_rank() {
    run -n 2 bash "$RANK" lines
    expect_rc 0
    local r
    for r in 0 1; do
        lines_of_rank "$OUT" $r > "$SCRUN_TEST_DIR/out.$r"
        lines_of_rank "$ERR" $r > "$SCRUN_TEST_DIR/err.$r"
        expect_file "$SCRUN_TEST_DIR/out.$r" \
            "[$r] out 1 of rank $r" "[$r] out 2 of rank $r" "[$r] out tail of rank $r"
        expect_file "$SCRUN_TEST_DIR/err.$r" "[$r] err 1 of rank $r" "[$r] err tail of rank $r"
    done
    [[ $(wc -l < "$OUT") == 6 && $(wc -l < "$ERR") == 4 ]] ||
        fail "expected 6 stdout and 4 stderr lines (stdout and stderr kept apart)"
}

test_long_line_is_kept_whole() {
    run -n 1 bash "$RANK" long-line 200000
    expect_rc 0
    expect_file "$OUT" "[0] $(head -c 200000 /dev/zero | tr '\0' x)" "[0] after"
}

# Long lines of several ranks arrive in pieces at the same time: a piece of one rank is
# never joined to a line of another, and no character is lost.
test_concurrent_long_lines_never_merge() {
    run -n 3 bash "$RANK" long-lines 4 150000
    expect_rc 0
    expect_no_match "$OUT" '^($|[^[]|\[[0-9]+\] $)'
    local r letter letters=abc
    for r in 0 1 2; do
        letter=${letters:r:1}
        expect_no_match "$OUT" "^\\[$r\\] .*[^$letter]"
        [[ $(lines_of_rank "$OUT" $r | tr -cd "$letter" | wc -c) == 600000 ]] ||
            fail "rank $r: not all 600000 '$letter' arrived"
    done
}

# stdout and stderr one file (2>&1): a rank's unfinished stdout line is ended before
# another's stderr line, and its rest comes on a prefixed line.
test_lines_never_merge_when_stdout_and_stderr_are_one_file() {
    local t0=$EPOCHREALTIME
    "$SCRUN" -n 2 bash "$RANK" mixed-streams </dev/null >"$OUT" 2>&1
    rc=$?
    expect_rc 0
    expect_no_match "$OUT" '^($|[^[]|\[[0-9]+\] $)'
    expect_no_match "$OUT" '^\[0\] .*[^a]'
    expect_no_match "$OUT" '^\[1\] .*aa'
    [[ $(lines_of_rank "$OUT" 0 | tr -cd a | wc -c) == 300000 ]] ||
        fail "not all 300000 'a' of rank 0 arrived"
    [[ $(grep -c '^\[1\] warning [0-9]* from rank 1$' "$OUT") == 30 ]] ||
        fail "not all 30 lines of rank 1 arrived whole"
}

# stdout or stderr closed when scrun starts: replaced by /dev/null, as stdin is, before
# scrun reserves its port (the socket took descriptor 1 or 0, and scrun wrote into it).
test_closed_standard_descriptors_are_replaced() {
    "$SCRUN" -n 1 bash "$RANK" touch "$SCRUN_TEST_DIR/stdout_closed" </dev/null >&- 2>"$ERR"
    rc=$?
    expect_rc 0
    [[ -e $SCRUN_TEST_DIR/stdout_closed ]] || fail "the rank did not run to its end"
    "$SCRUN" -n 1 bash -c 'cat; echo "cat: $?"' <&- >"$OUT" 2>"$ERR"
    rc=$?
    expect_rc 0
    expect_line "$OUT" "[0] cat: 0"
}

# A soft open-file limit too low for two pipes per rank is raised for scrun (it stopped
# at rank 507 of 600 under 1024); the ranks get the limit scrun found.
test_open_file_limit_is_raised_for_many_ranks() {
    local hard
    hard=$(ulimit -Hn)
    [[ $hard == unlimited || $hard -ge 2000 ]] || { echo "SKIP: hard limit $hard"; exit 77; }
    (ulimit -Sn 1024 && "$SCRUN" -n 600 bash "$RANK" limit </dev/null >"$OUT" 2>"$ERR")
    rc=$?
    expect_rc 0
    [[ $(grep -c '^\[[0-9]*\] nofile=1024$' "$OUT") == 600 ]] ||
        fail "not every rank ran with the limit of 1024"
}

# A reader that takes nothing (a terminal paused with Ctrl-S): scrun still acts on
# signals. Two SIGINTs kill the ranks at once and scrun ends within the grace period of
# its last output (3 s); it waited for the reader (20 s here) before. The grace period
# outlasts the 0.3 s between the two signals on a loaded machine (with 1 s, a second
# SIGINT could find the ranks SIGKILLed at the end of the grace period already).
test_signals_are_acted_on_while_the_reader_stalls() {
    ( "$SCRUN" -n 2 --grace 3 bash "$RANK" spew </dev/null 2>"$ERR"
      echo $? >"$SCRUN_TEST_DIR/rc" ) | (sleep 20) &
    BG_PID=$!
    local pid= deadline=$((SECONDS + 5))
    while [[ -z $pid ]] && ((SECONDS < deadline)); do
        pid=$(pgrep -f -- "^$SCRUN -n 2 --grace 3 bash $RANK spew" | head -1)
        sleep 0.1
    done
    [[ -n $pid ]] || fail "scrun did not start"
    sleep 1 # the pipe to the reader fills
    local t0=$EPOCHREALTIME
    kill -INT "$pid"
    # The second only once the first was handled: two sent before scrun ran merged into
    # one pending SIGINT on a loaded machine (CI, 2026-12-07), the grace's SIGKILL then.
    wait_for_match "$ERR" "^scrun: received SIGINT"
    kill -INT "$pid"
    while kill -0 "$pid" 2>/dev/null && [[ ! -s $SCRUN_TEST_DIR/rc ]]; do
        elapsed=$(seconds_since "$t0")
        awk -v e="$elapsed" 'BEGIN { exit !(e < 12) }' || fail "scrun still runs ${elapsed}s after SIGINT"
        sleep 0.1
    done
    elapsed=$(seconds_since "$t0")
    expect_elapsed_below 10
    for _ in $(seq 50); do [[ -s $SCRUN_TEST_DIR/rc ]] && break; sleep 0.1; done
    rc=$(cat "$SCRUN_TEST_DIR/rc")
    expect_rc 130
    expect_line "$ERR" "scrun: ranks still running at a second SIGINT, sending SIGKILL: 0 1"
    pkill -P "$BG_PID" sleep 2>/dev/null || true
}

test_failing_rank_is_named_and_others_stopped() {
    run -n 3 --grace 10 bash "$RANK" fail 1 3
    expect_rc 1
    expect_line "$ERR" "scrun: rank 1 exited with status 3"
    expect_no_match "$ERR" "^scrun: rank [02] (exited|was killed)"
    # The sleeping ranks end on SIGTERM, long before the grace period is over: left to
    # the SIGKILL after it, scrun would end 10 s after the failure.
    elapsed_since_failure
    expect_elapsed_below 5
}

# A list of stopped ranks too long for one line says how many there are in all (it was
# cut at about 250 characters without a mark).
test_long_list_of_stopped_ranks_says_how_many() {
    run -n 120 bash "$RANK" fail 0 3
    expect_rc 1
    grep -qE '^scrun: rank 0 failed first; ranks stopped by scrun \(or failing after it\):( [0-9]+)+ \.\.\. \(119 in all\)$' "$ERR" ||
        fail "no line listing the stopped ranks with their count"
}

test_rank_ignoring_sigterm_is_killed_after_grace() {
    run -n 3 --grace 0.5 bash "$RANK" fail-ignoring-term 2 4
    expect_rc 1
    expect_line "$ERR" "scrun: rank 2 exited with status 4"
    expect_no_match "$ERR" "^scrun: rank [01] (exited|was killed)"
    grep -q "SIGKILL" "$ERR" || fail "stderr does not say that SIGKILL was sent"
    # 0.5 s of grace from the failure, not the default 3 s.
    elapsed_since_failure
    expect_elapsed_at_least 0.5
    expect_elapsed_below 2.5
}

test_rank_killed_by_signal_is_named() {
    run -n 3 --grace 10 bash "$RANK" kill-self 1 KILL
    expect_rc 1
    expect_line "$ERR" "scrun: rank 1 was killed by signal 9 (SIGKILL)"
    expect_no_match "$ERR" "^scrun: rank [02] (exited|was killed)"
    # The others end on SIGTERM, not 10 s later at the SIGKILL after the grace period.
    elapsed_since_failure
    expect_elapsed_below 5
    # Every signal has its name (SIGPROF was "unknown signal").
    run -n 2 bash "$RANK" kill-self 0 PROF
    expect_rc 1
    expect_line "$ERR" "scrun: rank 0 was killed by signal $(kill -l SIGPROF) (SIGPROF)"
}

# A rank killed by SIGKILL whose teardown takes a while (threads unmapping 512 MiB: its
# main thread a zombie meanwhile), and a surviving rank that sees it die and exits 1 at
# once: its exit is reaped first, and scrun named it as the failure and the killed rank
# as one it stopped.
test_rank_dying_before_a_failure_it_caused_is_named_first() {
    run -n 3 "$SCRUN_DYING_RANK" "$SCRUN_TEST_DIR"
    expect_rc 1
    expect_line "$ERR" "scrun: rank 1 was killed by signal 9 (SIGKILL)"
    expect_no_match "$ERR" "^scrun: rank [02] (exited|was killed)"
    grep -q '^scrun: rank 1 failed first' "$ERR" || fail "rank 1 is not named first"
}

# Rank 0 killed by a signal and rank 1 exiting 1 because of it, both ended before scrun
# reaps either (scrun stopped meanwhile): rank 0, reaped first, is named. scrun saw rank 1
# as a rank dying before rank 0 and named it (CI, host-only variant, where the two ended
# together in rank_dying_before_a_failure_it_caused_is_named_first the other way round).
test_rank_killed_is_named_before_a_rank_that_ended_with_it() {
    local t0=$EPOCHREALTIME r
    start_bg -n 3 bash "$RANK" killed-then-reacting 0 1
    wait_ready 3
    kill -STOP "$BG_PID"
    : > "$SCRUN_TEST_DIR/go"
    for r in 0 1; do
        wait_for_state "$(cat "$SCRUN_TEST_DIR/pid.$r")" Z 10
    done
    kill -CONT "$BG_PID"
    wait_bg 10 "$t0"
    expect_rc 1
    expect_line "$ERR" "scrun: rank 0 was killed by signal 9 (SIGKILL)"
    expect_no_match "$ERR" "^scrun: rank [12] (exited|was killed)"
    grep -q '^scrun: rank 0 failed first; ranks stopped by scrun (or failing after it): 1 2$' \
        "$ERR" || fail "rank 0 is not named first, with ranks 1 and 2 after it"
}

# wait_for_state PID STATE LIMIT: waits up to LIMIT s until PID's state letter is STATE.
wait_for_state() {
    local deadline=$((SECONDS + $3))
    while [[ $(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) != "$2" ]]; do
        ((SECONDS < deadline)) || fail "process $1 is not in state $2 after $3 s"
        sleep 0.01
    done
}

test_children_of_stopped_ranks_are_stopped() {
    run -n 3 bash "$RANK" fail-with-child 0
    expect_rc 1
    local r
    for r in 1 2; do
        [[ -s $SCRUN_TEST_DIR/child.$r ]] || fail "rank $r recorded no child"
        expect_gone "$(cat "$SCRUN_TEST_DIR/child.$r")"
    done
}

test_children_a_failed_rank_left_are_stopped() {
    run -n 3 --grace 1 bash "$RANK" fail-leaving-children 1
    expect_rc 1
    expect_line "$ERR" "scrun: rank 1 exited with status 1"
    [[ -s $SCRUN_TEST_DIR/child.a && -s $SCRUN_TEST_DIR/child.b ]] || fail "no children recorded"
    expect_gone "$(cat "$SCRUN_TEST_DIR/child.a")"
    expect_gone "$(cat "$SCRUN_TEST_DIR/child.b")"
    grep -q "left behind (their children) still running at the end of the grace period" "$ERR" ||
        fail "stderr does not say that the child ignoring SIGTERM got SIGKILL"
    expect_elapsed_below 4
}

# gone PID: waits up to 3 s until PID is gone or a zombie.
expect_gone() {
    local pid=$1 deadline=$((SECONDS + 3))
    while kill -0 "$pid" 2>/dev/null; do
        [[ $(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) == Z ]] && return
        ((SECONDS < deadline)) || fail "process $pid still runs"
        sleep 0.02
    done
}

# wait_ready N: waits up to 10 s until ranks 0..N-1 have marked themselves ready.
wait_ready() {
    local r deadline=$((SECONDS + 10))
    for ((r = 0; r < $1; r++)); do
        while [[ ! -e $SCRUN_TEST_DIR/ready.$r ]]; do
            ((SECONDS < deadline)) || fail "rank $r never got ready"
            sleep 0.01
        done
    done
}

# A launcher that kills scrun outright (a CTest timeout) must not leave ranks behind.
test_ranks_end_when_scrun_is_killed() {
    "$SCRUN" -n 2 bash "$RANK" sleep </dev/null >"$OUT" 2>"$ERR" &
    BG_PID=$!
    wait_ready 2
    kill -KILL $BG_PID
    wait $BG_PID
    expect_gone "$(cat "$SCRUN_TEST_DIR/pid.0")"
    expect_gone "$(cat "$SCRUN_TEST_DIR/pid.1")"
}

# forwarding SIGNAL: a signal sent to scrun reaches every rank; the ranks exit 0 on it,
# and scrun, interrupted, exits with 128 + the signal's number all the same.
expect_signal_forwarded() {
    local sig=$1 status=$((128 + $(kill -l "$1")))
    start_bg -n 3 bash "$RANK" trap "$sig"
    wait_ready 3
    kill -s "$sig" $BG_PID
    wait_bg 5 "$EPOCHREALTIME"
    expect_rc $status
    expect_line "$ERR" "scrun: interrupted by SIG$sig (exit status $status)"
    sort "$OUT" > "$SCRUN_TEST_DIR/sorted"
    expect_file "$SCRUN_TEST_DIR/sorted" \
        "[0] rank 0 got $sig" "[1] rank 1 got $sig" "[2] rank 2 got $sig"
}

test_sigterm_is_forwarded_to_every_rank() { expect_signal_forwarded TERM; }
test_sigint_is_forwarded_to_every_rank() { expect_signal_forwarded INT; }
test_sighup_is_forwarded_to_every_rank() { expect_signal_forwarded HUP; }

# Ranks that ignore the forwarded SIGINT are killed once the grace period is over.
test_sigint_escalates_to_sigkill_after_grace() {
    local t0
    start_bg -n 2 --grace 1 bash "$RANK" ignore INT
    wait_ready 2
    t0=$EPOCHREALTIME
    kill -INT $BG_PID
    wait_bg 20 "$t0"
    expect_rc 130
    expect_line "$ERR" "scrun: ranks still running 1 s after SIGINT, sending SIGKILL: 0 1"
    expect_line "$ERR" "scrun: interrupted by SIGINT (exit status 130)"
    expect_elapsed_at_least 1
    expect_gone "$(cat "$SCRUN_TEST_DIR/pid.0")"
    expect_gone "$(cat "$SCRUN_TEST_DIR/pid.1")"
}

# A second SIGINT kills the ranks at once, long before the grace period is over.
test_second_sigint_kills_at_once() {
    local t0
    start_bg -n 2 --grace 60 bash "$RANK" ignore INT
    wait_ready 2
    kill -INT $BG_PID
    wait_for_match "$ERR" "^scrun: received SIGINT" # the first one was handled
    t0=$EPOCHREALTIME
    kill -INT $BG_PID
    wait_bg 20 "$t0"
    expect_rc 130
    expect_line "$ERR" "scrun: ranks still running at a second SIGINT, sending SIGKILL: 0 1"
}

# With the reader of its stdout gone, scrun stops the ranks (which would otherwise write
# forever) and fails, as SIGPIPE ends a program run directly.
test_closed_stdout_stops_the_ranks() {
    timeout 20 "$SCRUN" -n 2 --grace 1 yes </dev/null 2>"$ERR" | head -n 1 >"$OUT"
    rc=${PIPESTATUS[0]}
    expect_rc 1
    expect_line "$ERR" "scrun: cannot write to stdout: Broken pipe"
    expect_line "$ERR" "scrun: stopping the 2 ranks (SIGTERM, SIGKILL after 1 s)"
    grep -qxE '\[[01]\] y' "$OUT" || fail "the line head read is not a rank's 'y'"
}

test_full_stdout_fails_after_the_ranks_finish() {
    "$SCRUN" -n 2 bash -c 'echo one; sleep 0.3; echo two; touch "$0.$SC_RANK"' \
        "$SCRUN_TEST_DIR/done" >/dev/full 2>"$ERR"
    rc=$?
    expect_rc 1
    expect_line "$ERR" "scrun: cannot write to stdout: No space left on device (the ranks' output from then on was lost)"
    [[ -e $SCRUN_TEST_DIR/done.0 && -e $SCRUN_TEST_DIR/done.1 ]] ||
        fail "the ranks were stopped before they finished"
}

test_all_ranks_succeeding_exits_zero_quietly() {
    run -n 4 true
    expect_rc 0
    [[ ! -s $OUT && ! -s $ERR ]] || fail "expected no output at all"
}

test_one_rank_exiting_nonzero_fails_even_if_last() {
    # shellcheck disable=SC2016 # expanded by the rank's shell
    run -n 2 bash -c '[[ $SC_RANK == 0 ]] || { sleep 0.2; exit 5; }'
    expect_rc 1
    expect_line "$ERR" "scrun: rank 1 exited with status 5"
}

test_stdin_goes_to_rank_0_only() {
    printf 'hello\n' | "$SCRUN" -n 2 bash "$RANK" stdin >"$OUT" 2>"$ERR"
    rc=$?
    expect_rc 0
    sort "$OUT" > "$SCRUN_TEST_DIR/sorted"
    expect_file "$SCRUN_TEST_DIR/sorted" "[0] read:[hello]" "[1] read:[]"
}

test_missing_program_is_reported() {
    run -n 1 "$SCRUN_TEST_DIR/no-such-program"
    expect_rc 1
    expect_line "$ERR" "[0] scrun: cannot run '$SCRUN_TEST_DIR/no-such-program': No such file or directory"
    expect_line "$ERR" "scrun: rank 0 exited with status 127"
}

# usage_error ARGS...: scrun exits 2 with a usage message and starts no rank.
expect_usage_error() {
    run "$@"
    expect_rc 2
    grep -q "^usage: scrun" "$ERR" || fail "no usage message on stderr"
    [[ ! -e $SCRUN_TEST_DIR/started ]] || fail "a rank was started"
}

test_usage_without_arguments() { expect_usage_error; }
test_usage_without_program() { expect_usage_error -n 2; }
test_usage_empty_program_name() { expect_usage_error -n 2 ""; }
test_usage_without_rank_count() { expect_usage_error bash "$RANK" touch "$SCRUN_TEST_DIR/started"; }
test_usage_zero_ranks() { expect_usage_error -n 0 bash "$RANK" touch "$SCRUN_TEST_DIR/started"; }
test_usage_rank_count_not_a_number() {
    expect_usage_error -n 2x bash "$RANK" touch "$SCRUN_TEST_DIR/started"
}
# Digits only: strtol took a leading blank or a plus sign (-n " 2" started 2 ranks).
test_usage_rank_count_with_a_blank_or_a_sign() {
    expect_usage_error -n " 2" bash "$RANK" touch "$SCRUN_TEST_DIR/started"
    expect_usage_error -n +2 bash "$RANK" touch "$SCRUN_TEST_DIR/started"
}
test_usage_unknown_option() {
    expect_usage_error -n 1 --bogus bash "$RANK" touch "$SCRUN_TEST_DIR/started"
    expect_line "$ERR" "scrun: unknown option '--bogus'"
    # Bundled short options: the one refused, not the argument before it.
    expect_usage_error -n 1 -vx bash "$RANK" touch "$SCRUN_TEST_DIR/started"
    expect_line "$ERR" "scrun: unknown option '-v'"
}
test_usage_bad_bind() {
    expect_usage_error -n 1 --bind socket bash "$RANK" touch "$SCRUN_TEST_DIR/started"
    expect_line "$ERR" "scrun: --bind is one of core|none, not 'socket'"
}
# SC_BIND from the environment is checked as --bind is: SC_BIND=bogus started ranks that
# all failed in sc_comm_init.
test_usage_bad_bind_from_environment() {
    SC_BIND=bogus expect_usage_error -n 1 bash "$RANK" touch "$SCRUN_TEST_DIR/started"
    expect_line "$ERR" "scrun: SC_BIND=bogus is not one of core|none"
}
# A blank a script left in a value shows in the refusal: "SC_BIND=none  is not core or
# none" read as if none were refused.
test_usage_blank_in_environment_value_is_shown() {
    SC_BIND='none ' expect_usage_error -n 1 bash "$RANK" touch "$SCRUN_TEST_DIR/started"
    expect_line "$ERR" "scrun: SC_BIND='none ' is not one of core|none"
    SC_MASTER_PORT=' 29500' expect_usage_error -n 1 bash "$RANK" touch \
        "$SCRUN_TEST_DIR/started"
    expect_line "$ERR" "scrun: SC_MASTER_PORT=' 29500' is not a port from 1 to 65535"
    MASTER_PORT=$'29500\t' expect_usage_error -n 1 --nnodes 2 --node-rank 0 bash "$RANK" \
        touch "$SCRUN_TEST_DIR/started"
    expect_line "$ERR" "scrun: MASTER_PORT='29500\\t' is not a port from 1 to 65535"
}
# A world larger than the library takes (65536 ranks) is refused before any rank starts;
# each rank failed with "world size 81920 exceeds the supported 65536".
test_usage_world_larger_than_supported() {
    expect_usage_error -n 20 --nnodes 4096 --master-addr h bash "$RANK" touch \
        "$SCRUN_TEST_DIR/started"
    expect_line "$ERR" "scrun: -n 20 on 4096 nodes is a world of 81920 ranks; shardcomm supports at most 65536"
}
test_usage_node_rank_not_below_nnodes() {
    expect_usage_error -n 1 --nnodes 2 --node-rank 2 --master-addr h bash "$RANK" touch \
        "$SCRUN_TEST_DIR/started"
}
test_usage_multi_node_without_master_addr() {
    expect_usage_error -n 1 --nnodes 2 --node-rank 1 bash "$RANK" touch "$SCRUN_TEST_DIR/started"
}
test_usage_bad_grace() {
    expect_usage_error -n 1 --grace -1 bash "$RANK" touch "$SCRUN_TEST_DIR/started"
}

test_help_prints_usage_and_exits_zero() {
    run --help
    expect_rc 0
    grep -q "^usage: scrun -n N" "$OUT" || fail "no usage on stdout"
    # The limits of -n and --nnodes were said only by the errors past them.
    grep -q "ranks on this node (1..4096; N x K at most 65536, the" "$OUT" ||
        fail "the usage does not give -n's limits"
    grep -q "number of nodes (1..4096, default 1)" "$OUT" ||
        fail "the usage does not give --nnodes's limits"
}

test_options_after_program_belong_to_it() {
    # shellcheck disable=SC2016 # expanded by the rank's shell
    run -n 1 bash -c 'echo "$*"' bash -n 5 --bogus --help
    expect_rc 0
    expect_file "$OUT" "[0] -n 5 --bogus --help"
}

declare -F "test_$TEST" >/dev/null || { echo "no test named $TEST" >&2; exit 2; }
"test_$TEST"
