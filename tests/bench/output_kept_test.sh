#!/usr/bin/env bash
# sc-bench's --json and --indices-out are put in place only when the run ends well: a
# run that fails after opening them (here: memory it cannot allocate, under ulimit -v)
# leaves the file as it was and no temporary file beside it, as does a run stopped by
# a signal (SIGTERM or SIGINT to scrun, which sends SIGTERM to the ranks; rank 0's
# sc-bench removes its temporary file before it dies); an empty file name is refused
# before anything runs; a run that ends well
# replaces the file, keeps its mode, and writes through a symbolic link to the file it
# names. Usage: output_kept_test.sh SC_BENCH SCRUN
set -uo pipefail
bench=$1 scrun=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_kept NAME COMMAND...: the command exits 1, out.json (and out.bin) still hold
# "old", and nothing else appeared in the directory.
expect_kept() {
  local name=$1 status
  shift
  echo old > out.json
  echo old > out.bin
  (ulimit -v 1500000; "$@") > "$name.log" 2>&1
  status=$?
  [ "$status" = 1 ] || fail "$name: exit status $status, expected 1: $(tail -3 "$name.log")"
  [ "$(cat out.json)" = old ] || fail "$name: out.json was changed: $(head -c 80 out.json)"
  [ "$(cat out.bin)" = old ] || fail "$name: out.bin was changed"
  local left
  left=$(ls -A | grep -v -x -e out.json -e out.bin -e '.*\.log')
  [ -z "$left" ] || fail "$name: left behind: $left"
}

expect_kept allreduce "$bench" allreduce -b 8 -e 1G -n 1 -w 0 --json out.json
expect_kept allreduce_2ranks "$scrun" -n 2 "$bench" allreduce -b 8 -e 1G -n 1 -w 0 \
  --json out.json
expect_kept topk "$bench" topk -n 1000M --iters 1 --mode exact --json out.json \
  --indices-out out.bin
expect_kept compressed "$bench" compressed -n 1000M --iters 1 --json out.json
# A selection that fails (here: SC_THREADS past the limit, read when the selector is
# made) after the header: the files were written with the failed mode left out.
expect_kept topk_mode_fails env SC_THREADS=5000 "$bench" topk -n 1K --iters 1 \
  --mode exact --json out.json --indices-out out.bin
expect_kept kernels "$bench" kernels -b 1G -n 1 --json out.json

# expect_stopped SIGNAL: a long run under scrun, stopped by SIGNAL sent to scrun once
# the temporary file exists: out.json holds "old" and nothing else is left.
expect_stopped() {
  local sig=$1 t
  echo old > out.json
  "$scrun" -n 2 "$bench" allreduce -b 8 -e 64M -n 200 -w 0 -c 0 --json out.json \
    > "stopped_$sig.log" 2>&1 &
  local pid=$!
  for t in $(seq 100); do
    ls out.json.* > /dev/null 2>&1 && break
    sleep 0.1
  done
  ls out.json.* > /dev/null 2>&1 || fail "$sig: no temporary file appeared"
  sleep 0.3
  kill -s "$sig" "$pid"
  wait "$pid"
  [ "$(cat out.json)" = old ] || fail "$sig: out.json was changed"
  local left
  left=$(ls -A | grep -v -x -e out.json -e out.bin -e '.*\.log')
  [ -z "$left" ] || fail "stopped by $sig: left behind: $left"
}
expect_stopped TERM
expect_stopped INT

# An empty name is refused at once (it made a temporary file ".XXXXXX" here and failed
# only after the whole run).
"$bench" allreduce -b 8 -e 8 -n 1 -w 0 --json "" > empty.log 2>&1
status=$?
[ "$status" = 2 ] || fail "--json '': exit status $status, expected 2"
grep -q "^sc-bench: cannot write '': the file name is empty$" empty.log ||
  fail "--json '': $(tail -2 empty.log)"
! grep -q '^#' empty.log || fail "--json '': measured before refusing"

# A run that ends well replaces the file, keeping its mode.
echo old > out.json
chmod 640 out.json
"$bench" allreduce -b 8 -e 8 -n 1 -w 0 --json out.json > ok.log 2>&1 ||
  fail "a good run failed: $(tail -3 ok.log)"
grep -q '"coll": "allreduce"' out.json || fail "a good run did not write out.json"
[ "$(stat -c %a out.json)" = 640 ] || fail "out.json's mode became $(stat -c %a out.json)"
# Through a link: the file named is replaced, the link stays a link.
ln -s out.json link.json
echo old > out.json
"$bench" allreduce -b 8 -e 8 -n 1 -w 0 --json link.json > ok.log 2>&1 ||
  fail "a good run through a link failed: $(tail -3 ok.log)"
[ -L link.json ] || fail "link.json is no longer a link"
grep -q '"coll": "allreduce"' out.json || fail "the run did not write the file link.json names"
left=$(ls -A | grep -v -x -e out.json -e out.bin -e link.json -e '.*\.log')
[ -z "$left" ] || fail "left behind after good runs: $left"

[ "$fails" = 0 ] && echo "ok: failed runs kept the files, good runs replaced them"
exit $((fails > 0))
