#!/usr/bin/env bash
# (Re)downloads the Debian packages tests/gpu/run.sh falls back on where the GPU
# machine lacks UCX's or hwloc's development files (libucx-dev, libhwloc-dev), their
# runtimes (libucx0 with libnuma1, libhwloc15) or pkg-config (pkgconf-bin with
# libpkgconf3), into .gpu-deps/ at the repository root (git-ignored). Needs apt-get
# and a reachable mirror (apt-get update first if the package lists are missing).
# UCX_DEB_VERSION / HWLOC_DEB_VERSION pin versions, e.g. 1.13.1-1 and 2.9.0-1: the UCX
# headers must not be newer than the GPU machine's UCX runtime (the runtime of the same
# version is downloaded beside them, for a machine that has none).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=$root/.gpu-deps
v_ucx=${UCX_DEB_VERSION:+=$UCX_DEB_VERSION}
v_hwloc=${HWLOC_DEB_VERSION:+=$HWLOC_DEB_VERSION}
pkgs=("libucx-dev$v_ucx" "libucx0$v_ucx" "libhwloc-dev$v_hwloc" "libhwloc15$v_hwloc"
      libnuma1 pkgconf-bin libpkgconf3)

mkdir -p "$dest"
tmp=$(mktemp -d "$dest/.download.XXXXXX")
chmod 755 "$tmp" # apt-get hands the download to its _apt user
trap 'rm -rf "$tmp"' EXIT
# apt-get download writes into the current directory; as root it warns that the
# download is not sandboxed, which is harmless here.
(cd "$tmp" && apt-get download "${pkgs[@]}")
for p in "${pkgs[@]}"; do
  rm -f "$dest/${p%%=*}"_*.deb
done
mv "$tmp"/*.deb "$dest"/
ls -l "$dest"/*.deb
