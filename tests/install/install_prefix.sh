# Sourced by the install tests (SRC BUILD as $1 $2): shardcomm installed from BUILD into
# a temporary prefix ($prefix, removed at exit), nothing found through LD_LIBRARY_PATH;
# configure_project for the projects under tests/install that find it.
set -euo pipefail
src=$1 build=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
unset LD_LIBRARY_PATH

# configure_project DIR FAILURE: configures tests/install/DIR, a project that finds the
# installed shardcomm (SC_EXAMPLES_DIR: the examples), in $prefix/DIR; where that fails,
# prints its output and FAILURE and exits 1.
configure_project() {
  local dir=$1 failure=$2
  cmake -S "$src/tests/install/$dir" -B "$prefix/$dir" -DCMAKE_PREFIX_PATH="$prefix" \
    -DSC_EXAMPLES_DIR="$src/examples" >"$prefix/$dir.log" 2>&1 && return
  cat "$prefix/$dir.log"
  echo "FAIL: $failure (above)"
  exit 1
}
