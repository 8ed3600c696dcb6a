#!/usr/bin/env bash
# A fuzzer's reproducer line carries every setting of the run that changes its cases:
# each fuzzer (arguments) runs alone with SC_EAGER_SENDS=bogus, which fails its
# sc_comm_init, after which it prints the line. It must hold that setting, the others
# set beside it (SC_ and UCX_ variables, a value with a blank quoted) and 1 rank, and
# none of the launch variables scrun sets itself. SC_EAGER_SENDS and SC_TIMEOUT were
# left out (each fuzzer named its own list), the line said "scrun -n 0", and the
# reducer's "--case -1" (no case was drawn yet).
# Usage: fuzz_repro_test.sh FUZZER...
for fuzzer in "$@"; do
  out=$(env -i PATH="$PATH" SC_WORLD_SIZE=1 SC_RANK=0 SC_EAGER_SENDS=bogus SC_TIMEOUT=7 \
          SC_CHUNK_BYTES=4096 UCX_TLS=^ib UCX_NET_DEVICES='lo x' "$fuzzer" --seed 1 2>&1)
  line=$(grep -o 'reproduce: .*' <<<"$out")
  [ -n "$line" ] || { echo "FAIL: $fuzzer printed no reproducer:"; echo "$out"; exit 1; }
  for want in "SC_EAGER_SENDS=bogus " "SC_TIMEOUT=7 " "SC_CHUNK_BYTES=4096 " "UCX_TLS=^ib " \
              "UCX_NET_DEVICES='lo x' " "scrun -n 1 "; do
    [[ "$line" == *"$want"* ]] || { echo "FAIL: $fuzzer: '$line' lacks '$want'"; exit 1; }
  done
  for unwanted in SC_WORLD_SIZE= SC_RANK= "--case -1"; do
    [[ "$line" != *"$unwanted"* ]] ||
      { echo "FAIL: $fuzzer: '$line' holds $unwanted"; exit 1; }
  done
  echo "$fuzzer: $line"
done
