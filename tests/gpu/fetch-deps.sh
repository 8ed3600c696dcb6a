#!/usr/bin/env bash
# (Re)downloads the Debian packages tests/gpu/run.sh falls back on where the GPU
# machine has the UCX (or hwloc) runtime but not its development files: libucx-dev and
# libhwloc-dev, into .gpu-deps/ at the repository root (git-ignored). Needs apt-get and
# a reachable mirror (apt-get update first if the package lists are missing).
# UCX_DEB_VERSION / HWLOC_DEB_VERSION pin versions, e.g. 1.13.1-1 and 2.9.0-1: the UCX
# headers must not be newer than the GPU machine's UCX runtime.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=$root/.gpu-deps
ucx=libucx-dev${UCX_DEB_VERSION:+=$UCX_DEB_VERSION}
hwloc=libhwloc-dev${HWLOC_DEB_VERSION:+=$HWLOC_DEB_VERSION}

mkdir -p "$dest"
tmp=$(mktemp -d "$dest/.download.XXXXXX")
chmod 755 "$tmp" # apt-get hands the download to its _apt user
trap 'rm -rf "$tmp"' EXIT
# apt-get download writes into the current directory; as root it warns that the
# download is not sandboxed, which is harmless here.
(cd "$tmp" && apt-get download "$ucx" "$hwloc")
rm -f "$dest"/libucx-dev_*.deb "$dest"/libhwloc-dev_*.deb
mv "$tmp"/*.deb "$dest"/
ls -l "$dest"/*.deb
