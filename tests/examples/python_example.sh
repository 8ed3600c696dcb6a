#!/usr/bin/env bash
# Runs a Python example on 2 ranks: python_example.sh SCRUN PYTHON LIBRARY SCRIPT.
# Exits 77 (skipped) where PYTHON cannot import torch.
scrun=$1 python=$2 library=$3 script=$4
if ! "$python" -c 'import torch' 2>/dev/null; then
  echo "SKIP: $python cannot import torch"
  exit 77
fi
SHARDCOMM_LIBRARY="$library" exec "$scrun" -n 2 "$python" "$script"
