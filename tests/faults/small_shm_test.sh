#!/usr/bin/env bash
# A /dev/shm too small for UCX's shared-memory transport (a container's, nearly full):
# sc_comm_init fails on every rank with SC_ERR_TRANSPORT and a sentence that says how
# much /dev/shm has free and what to change; with UCX_TLS=^posix (the change it names)
# the same run works. /dev/shm is a 4 MiB tmpfs in a mount namespace of its own. Needs
# root and unshare: exits 77 (skipped, saying why) without them.
# usage: small_shm_test.sh SCRUN SC_BENCH
set -u
scrun=$1 bench=$2
[ "$(id -u)" = 0 ] || { echo "SKIP: mounting a small /dev/shm needs root"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: unshare is not installed"; exit 77; }
unshare -m true 2>/dev/null || { echo "SKIP: no mount namespaces here"; exit 77; }
run() { # UCX_TLS value ('' for UCX's default), then the output file
  unshare -m sh -c 'mount -t tmpfs -o size=4m tmpfs /dev/shm && exec env "$@"' sh \
    ${1:+UCX_TLS=$1} SC_TIMEOUT=20 "$scrun" -n 2 "$bench" allreduce -b 8 -e 1M -f 32 \
    -n 2 -w 1 -c 1 >"$2" 2>&1
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rc=0
if run "" "$out/default"; then
  echo "FAIL: the run succeeded with 4 MiB of /dev/shm:"; cat "$out/default"; rc=1
elif ! grep -q "SC_ERR_TRANSPORT: rank [01]: UCX worker could not be created: .*(/dev/shm has [0-9.]* MiB free.*UCX_TLS=^posix" "$out/default"; then
  echo "FAIL: no sentence naming /dev/shm and what to change:"; cat "$out/default"; rc=1
fi
grep -h "SC_ERR_TRANSPORT" "$out/default" | head -1
if ! run "^posix" "$out/sysv"; then
  echo "FAIL: UCX_TLS=^posix did not work with 4 MiB of /dev/shm:"; cat "$out/sysv"; rc=1
fi
grep -h "avg busbw" "$out/sysv"
exit $rc
