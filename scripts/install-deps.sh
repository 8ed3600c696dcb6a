#!/usr/bin/env bash
# Installs the Debian packages that building, testing and benchmarking shardcomm need.
# Idempotent: installs only what is missing, runs apt-get update at most once.
set -euo pipefail

pkgs=(cmake make gcc g++ pkg-config python3
      libucx-dev ucx-utils libhwloc-dev hwloc
      libopenmpi-dev openmpi-bin
      iproute2   # ip and tc for bench/netem/ (a shaped link between namespaces)
      valgrind   # a CPU without AVX-512 as its programs see it (sc-info's SC_CPU_ISA test)
      libudev-dev)  # hwloc's static link flags name -ludev (pkg-config --static)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
