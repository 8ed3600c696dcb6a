#!/usr/bin/env bash
# sc-bench reducer's JSON stays valid JSON whatever the profile's file name holds: a
# quote, a backslash, a tab and a byte that is not UTF-8 (0xe9, a Latin-1 name) are
# escaped, the odd byte as \u00e9, and the name reads back as written (the tab was
# dropped and the byte copied raw: Python's json refused the file).
# Usage: reducer_json_path_test.sh SC_BENCH SCRUN PROFILE PYTHON
set -uo pipefail
bench=$1 scrun=$2 profile=$3 python=$4
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
name=$(printf 'q"\\\t\351.txt')
cp "$profile" "$dir/$name" || exit 1
"$scrun" -n 2 "$bench" reducer --profile "$dir/$name" --bucket-mb 1 --iters 2 --warmup 1 \
  --json "$dir/out.json" || { echo "FAIL: sc-bench reducer failed"; exit 1; }
"$python" - "$dir/out.json" "$dir/$name" <<'PY'
import json, os, sys
rows = json.load(open(sys.argv[1], "rb"))
want = os.fsencode(sys.argv[2]).decode("latin-1")
assert rows and all(r["profile"] == want for r in rows), (rows[0]["profile"], want)
print("ok:", ascii(rows[0]["profile"]))
PY
