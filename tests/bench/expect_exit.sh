#!/usr/bin/env bash
# expect_exit.sh STATUS [--match REGEX]... [--absent REGEX]... -- COMMAND...: runs COMMAND,
# which must exit with STATUS and print (stdout and stderr together) a line matching each
# --match and no line matching any --absent (grep -E), such as a row measured before an
# error that should have come first.
set -u
status=$1
shift
match=() absent=()
while [[ $1 != -- ]]; do
    case $1 in
    --match) match+=("$2") ;;
    --absent) absent+=("$2") ;;
    *) echo "expect_exit.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ $rc == "$status" ]] || fail "exit status $rc, expected $status"
for re in "${match[@]}"; do
    grep -qE -- "$re" <<<"$out" || fail "no line matches '$re'"
done
for re in "${absent[@]}"; do
    ! grep -qE -- "$re" <<<"$out" || fail "a line matches '$re'"
done
