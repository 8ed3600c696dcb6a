#!/usr/bin/env bash
# The rendezvous's table goes from rank 0 down a tree of fan-out SC_STORE_FANOUT. Usage:
# store_tree_test.sh SC_INFO MODE, under with_reserved_port.py SC_MASTER_PORT.
#   bytes           16 ranks, fan-out 2: every rank forms the communicator, and rank 0
#                   sends the whole table to its 2 children and its own client only, the
#                   13 others their parent's address (under 4 tables in all); with
#                   fan-out 16 it sends every rank the table, 16 tables (as it did at any
#                   size before)
#   parent_killed   8 ranks, fan-out 2 (rank 1 serves ranks 3 and 4, rank 3 serves 7):
#                   rank 1 is stopped while it waits for the store's answer and killed
#                   once the store answered: ranks 3 and 4 fail within seconds naming
#                   rank 1 as exited or killed, and rank 7 with rank 3's sentence (or
#                   each with the store's on rank 1, where it came first)
#   parent_stopped  the same with rank 1 left stopped: they fail after SC_TIMEOUT (3 s)
#                   and 2 s per level below rank 0, naming rank 1 as stopped or hung,
#                   instead of waiting for ever
#   child_stopped   8 ranks, fan-out 2: rank 3 is stopped while it waits for the store's
#                   answer, and a connection to rank 1 that says nothing (what a child
#                   stopped between its connect and its hello leaves) comes before rank
#                   4's: rank 4 gets the table from rank 1 within 2 s of the store's
#                   answer (it waited 5 s behind the silent connection when rank 1 served
#                   its children one after another), rank 1 fails naming rank 3 as its
#                   child that did not take the table, and the others with that sentence
#                   as the store tells them, rank 7 too, which waits for rank 3 and hears
#                   the store meanwhile (before 2026-12-07 it waited until its own
#                   deadline, 2 s later, and named rank 3 as its stopped parent); and so
#                   does rank 3 once resumed
#   child_killed_before_fetch  8 ranks, fan-out 2, SC_TIMEOUT 10: rank 3 is stopped while
#                   it waits for the store's answer and killed once the store answered,
#                   before it fetched the table from rank 1: every other rank fails within
#                   5 s naming rank 3 as exited or killed (rank 1 waited SC_TIMEOUT for it
#                   and the others went on into sc_comm_init)
#   failure_waiting  8 ranks, fan-out 2: ranks 1 and 2 are stopped while they wait for the
#                   store's answer, rank 2 is killed once the store answered (the store
#                   fails every rank naming it), and rank 1 resumed a second later, so
#                   that it finds the store's failure waiting as it comes to the tree:
#                   its children, ranks 3 and 4, waiting for the table, fail with the
#                   store's sentence naming rank 2 (its own, or rank 5's or 6's, whichever
#                   came first), and rank 7 (rank 3's child) too; rank 1 left them
#                   unserved as it returned, and they said that rank 1 had exited or was
#                   killed
#   failure_beside_stopped_parent  8 ranks, fan-out 2, SC_TIMEOUT 10: ranks 1 and 2 are
#                   stopped while they wait for the store's answer, and rank 2 is killed
#                   once the store answered, while rank 1 stays stopped: ranks 3 and 4,
#                   waiting for the table from rank 1, and rank 7 (rank 3's child) fail
#                   within 3 s with the store's sentence naming rank 2, as the others do;
#                   they waited for rank 1 until their deadline (SC_TIMEOUT and 2 s a
#                   level: 14 s, 16 s for rank 7) and then named it stopped or hung
#   answers_take_long  the same with rank 1 reading its answer at 1 MiB/s (6 s for the
#                   table) and SC_TIMEOUT 8: the store answers every rank (a rank that
#                   reads slowly is no stalled one), and as ranks 1-6 never say they have
#                   the table, ranks 0 and 7 fail with the store's SC_ERR_TIMEOUT naming
#                   them; the store's deadline counted from its last answer, so that rank
#                   0, answered first, gave up on it first and said rank 0 was hung
#   answer_stopped  8 ranks, fan-out 8 (every rank a child of rank 0, given the table by
#                   the store), SC_TIMEOUT 20: ranks 1-7 are large_blob_rank.py with blobs
#                   of 1 MiB, and rank 1 is stopped after its hello and resumed 7 s after
#                   the last rank arrived: ranks 2-7 take their whole answer before (by
#                   6.5 s), and once rank 1 is resumed every rank hears the store's SC_SUCCESS
#                   at the tree's end; the store answered the ranks one after another, so
#                   that ranks 2-7 waited 5 s behind rank 1 and then failed with it, named
#                   as stopped or hung
#   answer_stopped_timeout_inf  the same with SC_TIMEOUT=inf, which a user debugging a
#                   rank in gdb sets: rank 1, stopped longer than 5 s, is waited for (it
#                   failed the rendezvous after 5 s whatever SC_TIMEOUT said)
#   answer_stopped_past_own_deadline  16 ranks, fan-out 16, SC_TIMEOUT 10: rank 1, a real
#                   rank, is stopped after its hello, ranks 2-15 are large_blob_rank.py
#                   with blobs of 1 MiB (a table of 14 MiB, more than its socket holds),
#                   and rank 1 is resumed 13 s after the last rank arrived, past its own
#                   deadline (SC_TIMEOUT and 3 s from its start) but before the store's
#                   (16 s), with rank 0 stopped for 1 s meanwhile (rank 1 finds its socket
#                   empty past its deadline): it takes the rest of its answer, and ranks
#                   2-15 hear the store's SC_SUCCESS; until 2026-12-07 rank 1 gave up on the rest at
#                   its own deadline ("the store of rank 0 never answered"), and the store
#                   failed every rank naming it as exited or killed
#   verdicts_beside_stopped  6 ranks, fan-out 8 (every rank a child of rank 0), SC_TIMEOUT
#                   20: ranks 1-3 are large_blob_rank.py full with blobs of 1 MiB, stopped
#                   after their hello, so that each one's answer (the table, 3 MiB) fills
#                   its socket; rank 4 is killed once every answer went, and rank 5 hears
#                   the store's failure naming it within 4 s, and ranks 1-3, resumed 3 s
#                   after the kill, hear it too; the store told the ranks in turn, each
#                   within 5 s, so that rank 5 waited 15 s behind ranks 1-3 (skipped
#                   where this host's sockets do not take 3 MiB each)
#   answer_given_up  8 ranks, fan-out 8, SC_TIMEOUT 15: rank 1, a real rank, is stopped
#                   after its hello, ranks 2-7 are large_blob_rank.py full with blobs of
#                   1 MiB (a table of 6 MiB, more than rank 1's socket holds), and rank 1
#                   is resumed 30 s after the last rank arrived, past the store's deadline
#                   (21 s), which fails the rendezvous naming it: it fails saying that
#                   the store gave up on it, stopped or too slow, and ranks 2-7 hear the
#                   store's SC_ERR_TIMEOUT naming it; rank 1 said that the store never
#                   answered, or that rank 0 had exited or was killed
#   answer_half_sent_at_failure  the same with SC_TIMEOUT 20 and rank 7 a real rank,
#                   killed once ranks 2-6 took their answers, and rank 1 resumed 2 s
#                   later: it takes the rest of its answer and fails with the store's
#                   sentence naming rank 7; the store closed its connection with the
#                   answer half sent, and rank 1 said that rank 0 had exited or was killed
#   word_stopped    3 ranks, SC_TIMEOUT 4: rank 1 is large_blob_rank.py half_word, which
#                   takes its answer and sends the header of a failure's word and a part
#                   of its sentence (a rank stopped in the middle of its word): ranks 0 and 2
#                   fail by the store's deadline (SC_TIMEOUT and 2 s for each of the
#                   tree's 1 level and 2 more: 10 s) with SC_ERR_TIMEOUT naming rank 1
#                   with how much of its word it sent, as stopped or hung; the store read
#                   the sentence blocking for 2 s, holding up every other rank, and then
#                   named rank 1 as exited or killed
#   watch_poll_fails  3 ranks, SC_TIMEOUT=inf, rank 0 with fail_store_poll.c preloaded (its
#                   store's poll over the ranks' connections fails with ENOMEM; usage:
#                   store_tree_test.sh SC_INFO watch_poll_fails SHIM): every rank fails
#                   within 20 s with SC_ERR_SYSTEM saying the store could not wait on the
#                   ranks' connections; the store polled again until its deadline, for
#                   ever with SC_TIMEOUT=inf
#   gather_poll_fails  the same with SC_TEST_FAIL_POLL=gather: the store's poll over its
#                   listening socket and the connections arriving fails once one came;
#                   every rank fails within 20 s with SC_ERR_SYSTEM saying the store could
#                   not wait on the arriving connections. The store spun until its
#                   deadline, for ever with SC_TIMEOUT=inf, dropping each arrival unread
#                   after 5 s, so that the ranks, closed unanswered three times, said
#                   what listens there is no shardcomm store, and rank 0 never ended
#   answer_not_taken  8 ranks, fan-out 8 (every rank a child of rank 0, given the table
#                   by the store), SC_TIMEOUT 4: ranks 1-6 are large_blob_rank.py with
#                   blobs of 1 MiB, and rank 1 reads nothing of its answer (stopped): ranks
#                   0 and 7 fail by the store's deadline (SC_TIMEOUT and 2 s for each of
#                   the tree's 1 level and 2 more: 10 s, timed from the store's first
#                   answer as ranks 2-6 print it) with SC_ERR_TIMEOUT naming rank 1
#                   with how much of its answer it took, and ranks 2-6, which never say
#                   they have the table, as stopped or hung; until 2026-12-07 the store
#                   gave up on rank 1 after 5 s without a piece taken, whatever SC_TIMEOUT
#                   said, and before that rank 0's store waited for ever in send()
#                   for rank 1 to take the 6 MiB table, so that rank 0 hung, and rank 7
#                   reported after SC_TIMEOUT that the store never answered; then rank 0,
#                   whose word the store had not read, found its connection reset before
#                   the sentence came ("rank 0 exited or was killed")
#   parent_port_of_another_launch  8 ranks of launch launch-A, fan-out 2, SC_TIMEOUT 10:
#                   rank 1 is other_launch_parent.py, whose hello names a port where rank
#                   5 of launch launch-B listens (rank 1 exited, and a rank of another
#                   launch on the host got its port), which refuses its children, ranks
#                   3 and 4: every rank fails within 5 s with rank 3's or rank 4's
#                   sentence naming launch launch-B; then 8 real ranks of launch-A
#                   succeed. Until 2026-12-07 the children's hello carried no launch, and
#                   they took the table the rank of launch-B gave them
set -u
sc_info=$1
mode=$2
shim=${3:-}
: "${SC_MASTER_PORT:?run under with_reserved_port.py SC_MASTER_PORT}"
. "$(dirname "$0")/launch_env.sh"
export SC_BIND=none SC_MASTER_ADDR=127.0.0.1 SC_LOG_LEVEL=info
# The Python stand-ins import store_wire.py beside them: no bytecode into the source tree.
export PYTHONDONTWRITEBYTECODE=1
logs=$(mktemp -d)
pids=()
trap 'kill -9 "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$logs"' EXIT
# Each rank in a process group of its own, whose parent (this script) is in another
# group of the same session: a group never orphaned. In this script's group, orphaned
# where ctest runs in the background from a shell that ended, every exit of a member
# sent the stopped ranks SIGHUP and SIGCONT, which killed or resumed them. (With job
# control a plain wait returns when its rank stops: the waits below are wait -f.)
set -m

fail() {
  echo "FAIL $mode: $*"
  for f in "$logs"/*; do echo "--- rank ${f##*/}:"; grep -v '^#' "$f" | tail -4; done
  exit 1
}

# start RANK SIZE VARIABLE=VALUE...: rank RANK of a world of SIZE, its pid in pids.
start() {
  local r=$1 n=$2
  shift 2
  env "$@" SC_RANK="$r" SC_WORLD_SIZE="$n" SC_LOCAL_RANK="$r" "$sc_info" --transports \
    >"$logs/$r" 2>&1 &
  pids[$r]=$!
}

# start_and_stop SIZE RANK...: ranks 0 to SIZE - 2 of a world of SIZE started, and each
# RANK stopped once it listens for its children (its hello, which follows at once, sent):
# it waits stopped for the store's answer, which the last rank's start brings.
start_and_stop() {
  local n=$1 r
  shift
  for ((r = 0; r < n - 1; r++)); do start $r $n; done
  for r in "$@"; do
    wait_for 20 grep -q "rank $r listens on port" "$logs/$r" ||
      fail "rank $r never listened for its children"
  done
  sleep 0.5
  for r in "$@"; do kill -STOP "${pids[$r]}"; done
}

# hello_sent PID: whether process PID's connection to the store sent its hello (124
# bytes) and its blob (one send after it) and has nothing waiting: more than 124 bytes
# sent, its Send-Q empty.
hello_sent() {
  ss -HtnpiO state established "dport = :$SC_MASTER_PORT" |
    awk -v pid="pid=$1," 'index($0, pid) && $2 == 0 && match($0, /bytes_sent:[0-9]+/) &&
                          substr($0, RSTART + 11, RLENGTH - 11) + 0 > 124 { ok = 1 }
                          END { exit !ok }'
}

# start_rank_1_stopped SIZE LAST: ranks 0 and 1 of a world of SIZE started, rank 1
# stopped once its hello and blob went out (hello_sent: a fixed 0.5 s after it listened
# for its children could stop it before its hello under load), and ranks 2 to LAST as
# large_blob_rank.py full (blobs of 1 MiB).
start_rank_1_stopped() {
  local n=$1 last=$2 r
  start 0 $n
  start 1 $n
  wait_for 20 grep -q "rank 1 listens on port" "$logs/1" || fail "rank 1 never listened"
  wait_for 20 hello_sent "${pids[1]}" || fail "rank 1 never sent its hello"
  kill -STOP "${pids[1]}"
  for ((r = 2; r <= last; r++)); do
    python3 "$(dirname "$0")/large_blob_rank.py" full "$SC_MASTER_PORT" $r $n \
      >"$logs/$r" 2>&1 &
    pids[$r]=$!
  done
}

# Rank 0's line on what it sent: "SENT TABLE TABLES" (bytes in all, the table's bytes,
# how many ranks got the table from it).
sent_by_rank_0() {
  sed -n 's/.*rank 0 sent \([0-9]*\) bytes to [0-9]* ranks: the table of \([0-9]*\) bytes to \([0-9]*\) of them.*/\1 \2 \3/p' \
    "$logs/0"
}

# The port rank RANK said it listens on for its children in the tree (empty: not yet).
tree_port() {
  sed -n "s/.*rendezvous: rank $1 listens on port \([0-9]*\) for the children.*/\1/p" "$logs/$1"
}

case $mode in
bytes)
  n=16
  for fanout in 2 16; do
    rm -f "$logs"/*
    for ((r = 0; r < n; r++)); do start $r $n SC_STORE_FANOUT=$fanout SC_TIMEOUT=20; done
    for ((r = 0; r < n; r++)); do
      wait -f "${pids[$r]}" || fail "rank $r failed with SC_STORE_FANOUT=$fanout"
    done
    read -r sent table tables <<<"$(sent_by_rank_0)"
    [[ -n ${tables:-} ]] || fail "rank 0 did not say what it sent"
    echo "fan-out $fanout: rank 0 sent $sent bytes, the table ($table bytes) to $tables ranks"
    if ((fanout == 2)); then
      ((tables == 3)) || fail "rank 0 sent the table to $tables ranks, not 3"
      # Besides the 3 tables, 16 answers of a header and a place (under 128 bytes each).
      ((sent <= 3 * table + n * 128)) ||
        fail "rank 0 sent $sent bytes, more than 3 tables of $table bytes and $n answers"
    else
      ((tables == n)) || fail "rank 0 sent the table to $tables ranks, not $n"
      ((sent >= n * table)) || fail "rank 0 sent $sent bytes, less than $n tables"
    fi
  done
  ;;
parent_killed | parent_stopped)
  n=8
  export SC_STORE_FANOUT=2 SC_TIMEOUT=3
  for ((r = 0; r < n - 1; r++)); do start $r $n; done
  # Its info line, not a listening socket (UCX's own listen before it reached the store).
  wait_for 20 grep -q "rank 1 listens on port" "$logs/1" ||
    fail "rank 1 never listened for its children"
  sleep 0.5 # its hello follows at once
  kill -STOP "${pids[1]}"
  start $((n - 1)) $n
  wait_for 20 grep -q "rank 0 sent" "$logs/0" || fail "the store never answered"
  t0=$SECONDS
  [[ $mode == parent_killed ]] && kill -KILL "${pids[1]}"
  for r in 3 4 7; do
    wait -f "${pids[$r]}" && fail "rank $r succeeded"
  done
  elapsed=$((SECONDS - t0))
  if [[ $mode == parent_killed ]]; then
    why="rank 1 exited or was killed"
    ((elapsed < 3)) || fail "ranks 3, 4 and 7 took $elapsed s to fail (SC_TIMEOUT 3 s)"
  else
    why="rank 1 is stopped or hung"
    ((elapsed >= 3 && elapsed < 15)) || fail "ranks 3, 4 and 7 failed after $elapsed s"
  fi
  # Each gives its own sentence or the store's, whichever came first: the store's names
  # rank 1 as killed, or gives rank 3's or 4's sentence on it.
  store="rank 1 exited or was killed after the store answered it"
  for r in 3 4 7; do
    grep -Eq "from rank 1, its parent in the rendezvous's tree, at 127.0.0.1:[0-9]*: .*$why|$store" \
      "$logs/$r" || fail "rank $r does not name rank 1 as its tree's failed parent"
  done
  grep -Eq "rank [34] got no table of the ranks' blobs from rank 1|$store" "$logs/7" ||
    fail "rank 7 does not give the sentence of its parent, rank 3, or the store's"
  ;;
child_stopped)
  n=8
  export SC_STORE_FANOUT=2 SC_TIMEOUT=3
  start_and_stop $n 3
  wait_for 20 grep -q "rank 1 listens on port" "$logs/1" || fail "rank 1 never listened"
  port=$(tree_port 1)
  exec {silent}<>"/dev/tcp/127.0.0.1/$port" || fail "no connection to rank 1's port $port"
  start $((n - 1)) $n
  wait_for 20 grep -q "rank 0 sent" "$logs/0" || fail "the store never answered"
  t0=$EPOCHREALTIME
  wait_for 20 grep -q "rank 4 got the table of the ranks' blobs .* from rank 1" "$logs/4" ||
    fail "rank 4 never got the table from rank 1"
  took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  echo "rank 4 got the table $took s after the store's answer"
  awk -v t="$took" 'BEGIN { exit !(t < 2) }' ||
    fail "rank 4 got the table $took s after the store's answer (behind a silent connection)"
  wait -f "${pids[1]}" && fail "rank 1 succeeded"
  grep -q "rank 3, child of rank 1 in the rendezvous's tree, did not take the table" "$logs/1" ||
    fail "rank 1 does not name rank 3 as the child that did not take the table"
  exec {silent}>&-
  kill -CONT "${pids[3]}"
  wait -f "${pids[3]}" && fail "rank 3 succeeded once resumed"
  grep -q "rank 3: .*rank 3, child of rank 1 in the rendezvous's tree, did not take the table" \
    "$logs/3" || fail "rank 3, resumed, does not say that rank 1 gave up on it"
  for r in 0 2 4 5 6 7; do
    wait -f "${pids[$r]}" && fail "rank $r succeeded"
    grep -q "rank 3, child of rank 1 in the rendezvous's tree, did not take the table" \
      "$logs/$r" || fail "rank $r does not give rank 1's sentence on rank 3"
  done
  ;;
child_killed_before_fetch)
  n=8
  export SC_STORE_FANOUT=2 SC_TIMEOUT=10
  for ((r = 0; r < n - 1; r++)); do start $r $n; done
  wait_for 20 grep -q "rank 3 listens on port" "$logs/3" || fail "rank 3 never listened"
  sleep 0.5 # its hello follows at once
  kill -STOP "${pids[3]}"
  start $((n - 1)) $n
  wait_for 20 grep -q "rank 0 sent" "$logs/0" || fail "the store never answered"
  t0=$SECONDS
  kill -KILL "${pids[3]}"
  for ((r = 0; r < n; r++)); do
    ((r == 3)) && continue
    wait -f "${pids[$r]}" && fail "rank $r succeeded"
  done
  elapsed=$((SECONDS - t0))
  ((elapsed < 5)) || fail "the ranks took $elapsed s to fail (SC_TIMEOUT 10 s)"
  for ((r = 0; r < n; r++)); do
    ((r == 3)) && continue
    grep -q "rank 3 exited or was killed" "$logs/$r" ||
      fail "rank $r does not name rank 3 as exited or killed"
  done
  ;;
failure_waiting | failure_beside_stopped_parent)
  n=8
  export SC_STORE_FANOUT=2 SC_TIMEOUT=3
  [[ $mode == failure_beside_stopped_parent ]] && SC_TIMEOUT=10
  start_and_stop $n 1 2
  start $((n - 1)) $n
  wait_for 20 grep -q "rank 0 sent" "$logs/0" || fail "the store never answered"
  kill -KILL "${pids[2]}"
  t0=$SECONDS
  if [[ $mode == failure_beside_stopped_parent ]]; then
    for r in 0 3 4 5 6 7; do
      wait_for 20 eval '! kill -0 "${pids[$r]}" 2>/dev/null' || fail "rank $r still runs"
      wait -f "${pids[$r]}" && fail "rank $r succeeded"
    done
    elapsed=$((SECONDS - t0))
    ((elapsed < 3)) || fail "the ranks took $elapsed s to fail after rank 2 was killed"
    for r in 0 3 4 5 6 7; do
      grep -q "rank $r: .*rank 2 exited or was killed" "$logs/$r" ||
        fail "rank $r does not name rank 2 as exited or killed"
    done
    echo "ok: $mode"
    exit 0
  fi
  wait_for 10 grep -q "rank 2 exited or was killed" "$logs/0" || fail "rank 0 never failed"
  sleep 1
  kill -CONT "${pids[1]}"
  for r in 1 3 4 7; do
    wait -f "${pids[$r]}" && fail "rank $r succeeded"
    grep -q "SC_ERR_PEER_FAILED: rank $r: .*rank 2 exited or was killed" "$logs/$r" ||
      fail "rank $r does not give the store's sentence naming rank 2"
  done
  ;;
answer_stopped | answer_stopped_timeout_inf)
  n=8
  export SC_TIMEOUT=20
  [[ $mode == answer_stopped_timeout_inf ]] && SC_TIMEOUT=inf
  start 0 $n
  for ((r = 1; r < n; r++)); do
    python3 "$(dirname "$0")/large_blob_rank.py" full "$SC_MASTER_PORT" $r $n \
      >"$logs/$r" 2>&1 &
    pids[$r]=$!
    ((r == 1)) || continue
    wait_for 20 grep -qs "rank 1 sent its hello" "$logs/1" || fail "rank 1 never sent its hello"
    kill -STOP "${pids[1]}"
  done
  wait_for 20 grep -qs "rank $((n - 1)) sent its hello" "$logs/$((n - 1))" ||
    fail "rank $((n - 1)) never sent its hello"
  t0=$EPOCHREALTIME
  # Each by 6.5 s (it waited 5 s behind rank 1 and then got the store's failure), well
  # before rank 1 is resumed at 7 s.
  for ((r = 2; r < n; r++)); do
    wait_for 7 grep -q "rank $r answered at" "$logs/$r" ||
      fail "rank $r did not take its answer while rank 1 is stopped"
    took=$(sed -n "s/rank $r answered at \([0-9.]*\).*/\1/p" "$logs/$r")
    took=$(awk -v a="$t0" -v b="$took" 'BEGIN { printf "%.2f", b - a }')
    echo "rank $r took its answer $took s after the last rank arrived"
    awk -v t="$took" 'BEGIN { exit !(t < 6.5) }' ||
      fail "rank $r took its answer $took s after the last rank arrived (rank 1 stopped)"
  done
  sleep "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { t = 7 - (b - a); print (t > 0 ? t : 0) }')"
  kill -CONT "${pids[1]}"
  for ((r = 1; r < n; r++)); do
    wait_for 20 eval '! kill -0 "${pids[$r]}" 2>/dev/null' || fail "rank $r still runs"
    wait -f "${pids[$r]}" || fail "rank $r failed"
    grep -q "rank $r: the store said 0" "$logs/$r" ||
      fail "rank $r did not hear the store's SC_SUCCESS at the tree's end"
  done
  ;;
answer_stopped_past_own_deadline)
  n=16
  export SC_TIMEOUT=10 SC_STORE_FANOUT=16
  start_rank_1_stopped $n $((n - 1))
  wait_for 20 grep -qs "rank $((n - 1)) sent its hello" "$logs/$((n - 1))" ||
    fail "rank $((n - 1)) never sent its hello"
  # 13 s: past rank 1's own rendezvous deadline (SC_TIMEOUT and 3 s from its start), before
  # the store's (SC_TIMEOUT after its first answer, 2 s for the tree's 1 level and 2 more).
  sleep 13
  # Rank 0 stopped for 1 s as rank 1 resumes, so that rank 1 empties its socket before
  # the store sends more (on the old code a race it lost most times, not every time).
  kill -STOP "${pids[0]}"
  kill -CONT "${pids[1]}"
  sleep 1
  kill -CONT "${pids[0]}"
  for ((r = 2; r < n; r++)); do
    wait_for 20 eval '! kill -0 "${pids[$r]}" 2>/dev/null' || fail "rank $r still runs"
    grep -q "rank $r: the store said 0" "$logs/$r" ||
      fail "rank $r did not hear the store's SC_SUCCESS at the tree's end"
  done
  # It goes on past the rendezvous (and fails at the blobs of the stand-ins).
  grep -q "failed: .*rank 1: rendezvous" "$logs/1" &&
    fail "rank 1 failed the rendezvous once resumed"
  ;;
verdicts_beside_stopped)
  n=6
  export SC_TIMEOUT=20
  start 0 $n
  for r in 1 2 3; do
    python3 "$(dirname "$0")/large_blob_rank.py" full "$SC_MASTER_PORT" $r $n \
      >"$logs/$r" 2>&1 &
    pids[$r]=$!
    wait_for 20 grep -qs "rank $r sent its hello" "$logs/$r" || fail "rank $r never sent its hello"
    kill -STOP "${pids[$r]}"
  done
  start 4 $n
  start 5 $n
  if ! wait_for 15 grep -q "rank 0 sent" "$logs/0"; then
    grep -q "took [0-9]* of the [0-9]* bytes of the store's answer" "$logs/0" &&
      { echo "skipped: this host's sockets do not take a stopped rank's 3 MiB answer"; exit 77; }
    fail "the store never sent every answer whole"
  fi
  kill -KILL "${pids[4]}"
  t0=$EPOCHREALTIME
  wait_for 20 eval '! kill -0 "${pids[5]}" 2>/dev/null' || fail "rank 5 still runs"
  took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  echo "rank 5 failed $took s after rank 4 was killed"
  wait -f "${pids[5]}" && fail "rank 5 succeeded"
  grep -q "SC_ERR_PEER_FAILED: rank 5: .*rank 4 exited or was killed" "$logs/5" ||
    fail "rank 5 does not give the store's sentence naming rank 4"
  awk -v t="$took" 'BEGIN { exit !(t < 4) }' ||
    fail "rank 5 heard the store's failure $took s after rank 4 was killed (behind ranks 1-3)"
  sleep "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { t = 3 - (b - a); print (t > 0 ? t : 0) }')"
  for r in 1 2 3; do kill -CONT "${pids[$r]}"; done
  for r in 0 1 2 3; do
    wait_for 20 eval '! kill -0 "${pids[$r]}" 2>/dev/null' || fail "rank $r still runs"
    wait -f "${pids[$r]}" && fail "rank $r succeeded"
  done
  grep -q "SC_ERR_PEER_FAILED: rank 0: .*rank 4 exited or was killed" "$logs/0" ||
    fail "rank 0 does not give the store's sentence naming rank 4"
  for r in 1 2 3; do
    grep -q "rank $r: the store said -5 .*rank 4 exited or was killed" "$logs/$r" ||
      fail "rank $r, resumed, did not hear the store's failure naming rank 4"
  done
  ;;
answer_given_up)
  n=8
  export SC_TIMEOUT=15
  start_rank_1_stopped $n $((n - 1))
  wait_for 40 grep -qs "rank $((n - 1)) sent its hello" "$logs/$((n - 1))" ||
    fail "rank $((n - 1)) never sent its hello"
  t0=$EPOCHREALTIME
  for ((r = 0; r < n; r++)); do
    ((r == 1)) && continue
    wait_for 45 eval '! kill -0 "${pids[$r]}" 2>/dev/null' || fail "rank $r still runs after 45 s"
    wait -f "${pids[$r]}" && fail "rank $r succeeded"
  done
  for ((r = 2; r < n; r++)); do
    grep -q "rank $r: the store said -4 .*rank 1 (it took [0-9]* of the [0-9]* bytes of the store's answer) never said it had the table" \
      "$logs/$r" || fail "rank $r did not hear the store's SC_ERR_TIMEOUT naming rank 1"
  done
  # 30 s after the last rank arrived: past the store's deadline (21 s).
  sleep "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { t = 30 - (b - a); print (t > 0 ? t : 0) }')"
  kill -CONT "${pids[1]}"
  wait_for 20 eval '! kill -0 "${pids[1]}" 2>/dev/null' || fail "rank 1 still runs once resumed"
  wait -f "${pids[1]}" && fail "rank 1 succeeded"
  grep -q "SC_ERR_TIMEOUT: rank 1: rendezvous at 127.0.0.1:[0-9]*: rank 0's store gave up on rank 1 before it took its whole answer .*: it was stopped or too slow" \
    "$logs/1" || fail "rank 1, resumed, does not say that the store gave up on it"
  ;;
answer_half_sent_at_failure)
  n=8
  export SC_TIMEOUT=20
  start_rank_1_stopped $n $((n - 2))
  start $((n - 1)) $n
  for ((r = 2; r < n - 1; r++)); do
    wait_for 20 grep -qs "rank $r answered at" "$logs/$r" || fail "rank $r took no answer"
  done
  sleep 1 # rank 7 takes its answer too
  kill -KILL "${pids[7]}"
  sleep 2
  kill -CONT "${pids[1]}"
  for ((r = 0; r < n - 1; r++)); do
    wait_for 20 eval '! kill -0 "${pids[$r]}" 2>/dev/null' || fail "rank $r still runs"
    wait -f "${pids[$r]}" && fail "rank $r succeeded"
  done
  grep -q "SC_ERR_PEER_FAILED: rank 1: .*rank 7 exited or was killed" "$logs/1" ||
    fail "rank 1, resumed, does not give the store's sentence naming rank 7"
  ;;
word_stopped)
  n=3
  export SC_TIMEOUT=4
  t0=$SECONDS
  start 0 $n
  python3 "$(dirname "$0")/large_blob_rank.py" half_word "$SC_MASTER_PORT" 1 $n \
    >"$logs/1" 2>&1 &
  pids[1]=$!
  start 2 $n
  wait_for 20 grep -qs "rank 1 sent half its word" "$logs/1" ||
    fail "rank 1 never sent half its word"
  for r in 0 2; do
    wait_for 25 eval '! kill -0 "${pids[$r]}" 2>/dev/null' || fail "rank $r still runs after 25 s"
    wait -f "${pids[$r]}" && fail "rank $r succeeded"
  done
  elapsed=$((SECONDS - t0))
  ((elapsed >= 9)) || fail "ranks 0 and 2 failed after $elapsed s, before the store's deadline (10 s)"
  for r in 0 2; do
    grep -q "SC_ERR_TIMEOUT: rank $r: .*rank 1 (it sent 21 bytes of its word, then nothing) never said it had the table .*: it is stopped or hung" \
      "$logs/$r" || fail "rank $r does not name rank 1, with what it sent of its word, as stopped"
  done
  ;;
watch_poll_fails | gather_poll_fails)
  n=3
  export SC_TIMEOUT=inf
  [[ -n $shim ]] || fail "no shim to preload into rank 0"
  waited="the ranks' connections"
  how=watch
  [[ $mode == gather_poll_fails ]] && { waited="the arriving connections"; how=gather; }
  start 0 $n LD_PRELOAD="$shim" SC_TEST_FAIL_POLL=$how
  for ((r = 1; r < n; r++)); do start $r $n; done
  for ((r = 0; r < n; r++)); do
    wait_for 20 eval '! kill -0 "${pids[$r]}" 2>/dev/null' || fail "rank $r still runs after 20 s"
    wait -f "${pids[$r]}" && fail "rank $r succeeded"
    grep -q "SC_ERR_SYSTEM: rank $r: .*rank 0's store could not wait on $waited (poll: Cannot allocate memory)" \
      "$logs/$r" || fail "rank $r does not say that the store's poll failed"
  done
  ;;
answer_not_taken | answers_take_long)
  n=8
  export SC_TIMEOUT=4
  first=stall
  [[ $mode == answers_take_long ]] && { SC_TIMEOUT=8; first=slow; }
  port=$SC_MASTER_PORT
  # Ranks 1-6 first, rank 0 and its store 0.5 s after them: they wait for it to listen,
  # as ranks do (they tried once, and a store not yet listening failed the rendezvous).
  for r in 1 2 3 4 5 6; do
    python3 "$(dirname "$0")/large_blob_rank.py" "$([[ $r == 1 ]] && echo $first || echo read)" \
      "$port" $r $n >"$logs/$r" 2>&1 &
    pids[$r]=$!
  done
  sleep 0.5
  start 0 $n
  start 7 $n
  if [[ $mode == answers_take_long ]]; then
    for r in 0 7; do
      wait_for 30 eval '! kill -0 "${pids[$r]}" 2>/dev/null' || fail "rank $r still runs after 30 s"
      wait -f "${pids[$r]}" && fail "rank $r succeeded"
      grep -q "SC_ERR_TIMEOUT: rank $r: .*ranks 1, 2, 3, 4, 5, 6 never said they had the table" \
        "$logs/$r" || fail "rank $r does not give the store's timeout naming ranks 1-6"
    done
    grep -q "rank 0 sent [0-9]* bytes to 8 ranks" "$logs/0" || fail "the store did not answer every rank"
    echo "ok: $mode"
    exit 0
  fi
  for r in 0 7; do
    wait_for 25 eval '! kill -0 "${pids[$r]}" 2>/dev/null' || fail "rank $r still runs after 25 s"
  done
  failed_at=$EPOCHREALTIME
  for r in 0 7; do wait -f "${pids[$r]}" && fail "rank $r succeeded"; done
  # Timed from the store's answer as the first of ranks 2-6 saw it come (the store's
  # deadline counts from its first answer), not from their start: starting them and
  # sending their blobs of 1 MiB took seconds under load.
  answered=$(sed -n 's/^rank [2-6] answered at \([0-9.]*\)$/\1/p' "$logs"/[2-6] | sort -n | head -1)
  [[ -n $answered ]] || fail "none of ranks 2-6 was answered"
  elapsed=$(awk -v a="$answered" -v f="$failed_at" 'BEGIN { printf "%.1f", f - a }')
  echo "ranks 0 and 7 failed $elapsed s after the store's first answer"
  awk -v e="$elapsed" 'BEGIN { exit !(e >= 8 && e < 14) }' ||
    fail "ranks 0 and 7 failed $elapsed s after the store's first answer (its deadline 10 s)"
  for r in 0 7; do
    grep -q "SC_ERR_TIMEOUT: rank $r: .*ranks 1 (it took [0-9]* of the [0-9]* bytes of the store's answer), 2, 3, 4, 5, 6 never said they had the table .*: they are stopped or hung" \
      "$logs/$r" || fail "rank $r does not name rank 1, with what it took, and ranks 2-6"
  done
  ;;
parent_port_of_another_launch)
  n=8
  export SC_STORE_FANOUT=2 SC_TIMEOUT=10 SC_LAUNCH_ID=launch-A
  python3 "$(dirname "$0")/other_launch_parent.py" "$SC_MASTER_PORT" $n launch-A launch-B \
    >"$logs/1" 2>&1 &
  pids[1]=$!
  t0=$SECONDS
  for r in 0 2 3 4 5 6 7; do start $r $n; done
  for r in 0 2 3 4 5 6 7; do
    wait_for 20 eval '! kill -0 "${pids[$r]}" 2>/dev/null' || fail "rank $r still runs"
    wait -f "${pids[$r]}" && fail "rank $r succeeded"
  done
  elapsed=$((SECONDS - t0))
  ((elapsed < 5)) || fail "the ranks took $elapsed s to fail (SC_TIMEOUT 10 s)"
  refused="what answered there is rank 5 of launch launch-B (from SC_LAUNCH_ID), world size 8, which refused rank [34], of launch launch-A (from SC_LAUNCH_ID), world size 8: rank 1 of this launch exited"
  # Each gives its own sentence or the store's, whichever came first: rank 3's or 4's
  # (one of them may hear the store before it asks).
  grep -q "refused rank [34] of launch 'launch-A'" "$logs/1" ||
    fail "the rank of launch launch-B refused neither rank 3 nor rank 4"
  for r in 0 2 3 4 5 6 7; do
    grep -q "rank $r: rendezvous at .*: rank [34] got no table of the ranks' blobs from rank 1, its parent in the rendezvous's tree, at 127.0.0.1:[0-9]*: $refused" \
      "$logs/$r" || fail "rank $r does not give rank 3's or 4's sentence naming launch launch-B"
  done
  grep -q "gave rank" "$logs/1" && fail "the rank of launch launch-B gave a rank its table"
  kill -9 "${pids[1]}" 2>/dev/null
  wait -f "${pids[1]}" 2>/dev/null
  rm -f "$logs"/*
  for ((r = 0; r < n; r++)); do start $r $n; done
  for ((r = 0; r < n; r++)); do
    wait -f "${pids[$r]}" || fail "rank $r of a launch of real ranks failed"
  done
  ;;
*)
  echo "unknown mode $mode"
  exit 2
  ;;
esac
echo "ok: $mode"
