#!/usr/bin/env bash
# Installs shardcomm into a temporary prefix and builds the C code of README.md's "Using
# it" section, as a program's main() with the names it leaves to the caller (grads, n,
# d_grads, stream: here a host buffer and stream NULL, which every build takes), with
# warnings as errors; on 2 ranks it runs without a word on stderr (the snippet prints
# sc_last_error() where sc_comm_init_from_env or sc_wait fails).
source "$(dirname "${BASH_SOURCE[0]}")/install_prefix.sh"

snippet=$(awk '/^## Using it/ { on = 1 } on && /^```c$/ { code = 1; next }
               code && /^```$/ { exit } code { print }' "$src/README.md")
[ -n "$snippet" ] || { echo "FAIL: no C code under '## Using it' in README.md"; exit 1; }
{
  grep '^#include' <<<"$snippet"
  echo '#include <stdio.h>'
  echo '#include <stdlib.h>'
  echo 'int main(void)'
  echo '{'
  echo '    size_t n = 4096;'
  echo '    float *grads = calloc(n, sizeof(float));'
  echo '    void *d_grads = calloc(n, 2), *stream = NULL;'
  grep -v '^#include' <<<"$snippet"
  echo '    free(grads);'
  echo '    free(d_grads);'
  echo '    return 0;'
  echo '}'
} >"$prefix/snippet.c"
cc -std=c11 -Wall -Wextra -Werror -I"$prefix/include" "$prefix/snippet.c" \
  -L"$(dirname "$(find "$prefix" -name libshardcomm.so | head -n 1)")" -lshardcomm \
  -o "$prefix/snippet" ||
  { cat -n "$prefix/snippet.c"; echo "FAIL: README.md's snippet does not build (above)"; exit 1; }
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib64" "$prefix/bin/scrun" -n 2 "$prefix/snippet" \
  2>"$prefix/snippet.err" ||
  { cat "$prefix/snippet.err"; echo "FAIL: README.md's snippet fails on 2 ranks"; exit 1; }
[ ! -s "$prefix/snippet.err" ] ||
  { cat "$prefix/snippet.err"; echo "FAIL: README.md's snippet reports errors"; exit 1; }
echo "README snippet test: it builds and runs on 2 ranks"
