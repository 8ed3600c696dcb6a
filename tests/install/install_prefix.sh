# Sourced by the install tests (SRC BUILD as $1 $2): shardcomm installed from BUILD into
# a temporary prefix ($prefix, removed at exit), nothing found through LD_LIBRARY_PATH.
set -euo pipefail
src=$1 build=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
unset LD_LIBRARY_PATH
