#!/usr/bin/env bash
# Installs shardcomm into a temporary prefix and builds the C code of README.md's "Using
# it" section, as a program's main() with the names it leaves to the caller (grads, n,
# d_grads, stream: host buffers and stream NULL, which every build takes), with warnings
# as errors. On 2 ranks it runs without a word on stderr (the snippet prints
# sc_last_error() where a call fails); with grads NULL, which the library refuses, it
# still exits 0 on every rank, having printed the refusal: a refused call writes no
# request, and the snippet waits on none.
source "$(dirname "${BASH_SOURCE[0]}")/install_prefix.sh"

snippet=$(awk '/^## Using it/ { on = 1 } on && /^```c$/ { code = 1; next }
               code && /^```$/ { exit } code { print }' "$src/README.md")
[ -n "$snippet" ] || { echo "FAIL: no C code under '## Using it' in README.md"; exit 1; }
libdir=$(dirname "$(find "$prefix" -name libshardcomm.so | head -n 1)")

# snippet NAME GRADS: the program $prefix/NAME, grads being GRADS (n floats).
snippet() {
  {
    grep '^#include' <<<"$snippet"
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    echo 'int main(void)'
    echo '{'
    echo '    size_t n = 4096;'
    echo "    float *grads = $2;"
    echo '    void *d_grads = calloc(n, 2), *stream = NULL;'
    grep -v '^#include' <<<"$snippet"
    echo '    free(grads);'
    echo '    free(d_grads);'
    echo '    return 0;'
    echo '}'
  } >"$prefix/$1.c"
  cc -std=c11 -Wall -Wextra -Werror -I"$prefix/include" "$prefix/$1.c" -L"$libdir" \
    -lshardcomm -o "$prefix/$1" ||
    { cat -n "$prefix/$1.c"; echo "FAIL: README.md's snippet does not build (above)"; exit 1; }
}

snippet plain 'calloc(n, sizeof(float))'
LD_LIBRARY_PATH=$libdir "$prefix/bin/scrun" -n 2 "$prefix/plain" 2>"$prefix/plain.err" ||
  { cat "$prefix/plain.err"; echo "FAIL: README.md's snippet fails on 2 ranks"; exit 1; }
[ ! -s "$prefix/plain.err" ] ||
  { cat "$prefix/plain.err"; echo "FAIL: README.md's snippet reports errors"; exit 1; }

snippet refused NULL
LD_LIBRARY_PATH=$libdir "$prefix/bin/scrun" -n 2 "$prefix/refused" 2>"$prefix/refused.err" ||
  { cat "$prefix/refused.err"
    echo "FAIL: README.md's snippet fails where the allreduce is refused"; exit 1; }
for rank in 0 1; do
  grep -q "^\[$rank\] rank $rank: sc_allreduce: sendbuf is NULL" "$prefix/refused.err" ||
    { cat "$prefix/refused.err"
      echo "FAIL: rank $rank of README.md's snippet does not print the refusal"; exit 1; }
done
echo "README snippet test: it builds and runs on 2 ranks, a refused call reported"
