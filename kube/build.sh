#!/usr/bin/env bash
# Build etcd, kube-apiserver and kube-scheduler once into a cache outside the source tree and
# print the cache directory (it holds the three binaries). They are this module's tools (go.mod's
# `tool` block), so the versions are pinned by go.mod/go.sum exactly as the oracle's: k8s.io/kubernetes
# v1.37.2 (the default Kubernetes) with every staging module replaced by v0.37.2, and the etcd server
# that v1.37.2 itself requires (v3.7.0). They need Go 1.26 (go.mod's `go` line): an older go fetches
# it through the module proxy (GOTOOLCHAIN=auto, Go's default). The first build takes about 25
# minutes on 2 cores (kube-apiserver is most of it). The cache key is go.mod, go.sum, this script and the Go version: any change builds afresh.
#
# Builds into one cache entry take turns (flock(1), util-linux, on the entry's .lock): a second build
# started meanwhile (another checkout, CI beside a developer) waits, then finds the binaries the
# first made. Without flock (not Linux) builds do not wait, but each writes its own partial files.
set -euo pipefail
cd "$(dirname "$0")"
key=$( (cat go.mod go.sum build.sh; go version) | sha256sum | cut -c1-16)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/policylang/kube/$key"
build() {  # build NAME PACKAGE: one binary, written whole or not at all
    if [ ! -x "$dir/$1" ]; then
        start=$(date +%s)
        echo "building $1 ($2; the first build takes minutes)..." >&2
        partial="$dir/$1.partial.$$"
        # go is not handed the lock's descriptor: nothing it leaves running could hold the lock.
        nice -n 10 go build -trimpath -o "$partial" "$2" 9>&- || { rm -f "$partial"; return 1; }
        mv "$partial" "$dir/$1"
        echo "built $1 in $(( $(date +%s) - start ))s: $dir/$1" >&2
    fi
}
mkdir -p "$dir"
# The entry's lock, on descriptor 9, held until the script ends however it ends (the kernel
# releases it then): a build that finds it taken waits, then builds only what is still missing.
exec 9>"$dir/.lock"
if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
    echo "waiting for another build into $dir to finish..." >&2
    flock 9
fi
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
echo "$dir"
