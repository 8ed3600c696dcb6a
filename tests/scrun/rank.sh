#!/usr/bin/env bash
# A rank for the scrun tests: behaves as MODE says, using the SC_* variables scrun sets.
# Ready files go to $SCRUN_TEST_DIR so a failing rank can wait until the others are set up.
set -u
mode=$1
shift
rank=${SC_RANK:-unset}

mark_ready() { : > "$SCRUN_TEST_DIR/ready.$rank"; }

# Records the moment this rank fails (an $EPOCHREALTIME) in $SCRUN_TEST_DIR/failed_at, so
# that a test measures scrun's reaction from it, not from a start-up a loaded machine
# may stretch.
mark_failing() { echo "$EPOCHREALTIME" > "$SCRUN_TEST_DIR/failed_at.tmp" &&
                 mv "$SCRUN_TEST_DIR/failed_at.tmp" "$SCRUN_TEST_DIR/failed_at"; }

# Waits (up to 10 s) until every other rank of the world has marked itself ready.
wait_for_others() {
    local deadline=$((SECONDS + 10)) r
    for ((r = 0; r < SC_WORLD_SIZE; r++)); do
        [[ $r == "$rank" ]] && continue
        while [[ ! -e $SCRUN_TEST_DIR/ready.$r ]]; do
            ((SECONDS < deadline)) || { echo "rank $rank: rank $r never got ready" >&2; exit 99; }
            sleep 0.01
        done
    done
}

case $mode in
env)
    echo "rank=${SC_RANK-} world=${SC_WORLD_SIZE-} local_rank=${SC_LOCAL_RANK-}" \
         "local_size=${SC_LOCAL_SIZE-} node_rank=${SC_NODE_RANK-}" \
         "addr=${SC_MASTER_ADDR-} port=${SC_MASTER_PORT-} bind=${SC_BIND-}"
    ;;
getenv) # getenv NAME: prints NAME=value of a variable scrun does not set
    echo "$1=${!1-unset}"
    ;;
lines)
    printf 'out 1 of rank %s\nout 2 of rank %s\nout tail of rank %s' "$rank" "$rank" "$rank"
    printf 'err 1 of rank %s\nerr tail of rank %s' "$rank" "$rank" >&2
    ;;
long-line) # long-line LEN: one line of LEN 'x', then a short one
    head -c "$1" /dev/zero | tr '\0' x
    printf '\nafter\n'
    ;;
mixed-streams) # rank 0: one stdout line of 300000 'a' written in pieces; rank 1: stderr
    # lines meanwhile (under 2>&1 they met in one file and merged)
    if [[ $rank == 0 ]]; then
        for ((i = 0; i < 30; i++)); do
            head -c 10000 /dev/zero | tr '\0' a
            sleep 0.01
        done
        echo
    else
        for ((i = 0; i < 30; i++)); do
            echo "warning $i from rank 1" >&2
            sleep 0.01
        done
    fi
    ;;
spew) # spew: prints lines without end, ignoring SIGINT and SIGTERM
    trap '' INT TERM
    while :; do echo "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; done
    ;;
limit) # limit: prints the rank's soft open-file limit
    echo "nofile=$(ulimit -Sn)"
    ;;
long-lines) # long-lines COUNT LEN: COUNT lines of LEN times the rank's letter (a, b, ...)
    letters=abcdefghijklmnopqrstuvwxyz
    letter=${letters:rank:1}
    line=$(head -c "$2" /dev/zero | tr '\0' "$letter")
    for ((i = 0; i < $1; i++)); do
        echo "$line"
    done
    ;;
sleep) # records its pid, then sleeps as the rank process itself
    echo $$ > "$SCRUN_TEST_DIR/pid.$rank"
    mark_ready
    exec sleep 1000
    ;;
ignore) # ignore SIGNAL: records its pid, then sleeps as the rank process, ignoring SIGNAL
    trap '' "$1"
    echo $$ > "$SCRUN_TEST_DIR/pid.$rank"
    mark_ready
    exec sleep 1000
    ;;
fail) # fail R CODE: rank R exits with CODE once the others are ready; they sleep
    if [[ $rank == "$1" ]]; then
        wait_for_others
        mark_failing
        exit "$2"
    fi
    mark_ready
    sleep 1000
    ;;
fail-ignoring-term) # like fail, but the other ranks (and their sleep) ignore SIGTERM
    if [[ $rank == "$1" ]]; then
        wait_for_others
        mark_failing
        exit "$2"
    fi
    trap '' TERM
    mark_ready
    sleep 1000
    ;;
kill-self) # kill-self R SIGNAL: rank R kills itself with SIGNAL once the others are ready
    if [[ $rank == "$1" ]]; then
        wait_for_others
        mark_failing
        kill -s "$2" $$
        sleep 10
    fi
    mark_ready
    sleep 1000
    ;;
killed-then-reacting) # killed-then-reacting K R: once $SCRUN_TEST_DIR/go exists, rank K
    # kills itself with SIGKILL; rank R waits until K is a zombie and exits 1 (as a program
    # whose library saw a peer die does). Each leaves its pid in pid.RANK.
    echo $$ > "$SCRUN_TEST_DIR/pid.$rank.tmp" && mv "$SCRUN_TEST_DIR/pid.$rank.tmp" "$SCRUN_TEST_DIR/pid.$rank"
    mark_ready
    [[ $rank == "$1" || $rank == "$2" ]] || sleep 1000
    while [[ ! -e $SCRUN_TEST_DIR/go ]]; do sleep 0.01; done
    [[ $rank == "$1" ]] && kill -s KILL $$
    killed=$(cat "$SCRUN_TEST_DIR/pid.$1")
    while [[ $(awk '{ print $3 }' "/proc/$killed/stat" 2>/dev/null) != Z ]]; do sleep 0.01; done
    exit 1
    ;;
fail-with-child) # fail-with-child R: rank R exits 1; the others record a child that sleeps
    if [[ $rank == "$1" ]]; then
        wait_for_others
        exit 1
    fi
    sleep 1000 &
    echo $! > "$SCRUN_TEST_DIR/child.$rank"
    mark_ready
    wait
    ;;
fail-leaving-children) # fail-leaving-children R: rank R starts two children, one that
    # ignores SIGTERM, records them and exits 1; the others wait
    if [[ $rank == "$1" ]]; then
        wait_for_others
        sleep 1000 &
        echo $! > "$SCRUN_TEST_DIR/child.a"
        # The child records itself once its trap is set: a SIGTERM before it would end it.
        bash -c 'trap "" TERM; echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; while :; do sleep 0.05; done' \
            child "$SCRUN_TEST_DIR/child.b" &
        until [[ -s $SCRUN_TEST_DIR/child.b ]]; do sleep 0.01; done
        exit 1
    fi
    mark_ready
    sleep 1000
    ;;
trap) # trap SIGNAL: reports SIGNAL and exits 0 when it arrives
    sleep 1000 &
    child=$! # a background child ignores SIGINT, so it is ended here
    trap 'echo "rank $rank got $1"; kill $child; exit 0' "$1"
    mark_ready
    wait
    exit 7 # wait returned without the signal
    ;;
stdin)
    line=
    read -r line
    echo "read:[$line]"
    ;;
touch) # touch FILE: shows that a rank was started
    : > "$1"
    ;;
*)
    echo "rank.sh: unknown mode $mode" >&2
    exit 98
    ;;
esac
