#!/usr/bin/env bash
# Build etcd, kube-apiserver and kube-scheduler once into a cache outside the source tree and
# print the cache directory (it holds the three binaries). They are this module's tools (go.mod's
# `tool` block), so the versions are pinned by go.mod/go.sum exactly as the oracle's: k8s.io/kubernetes
# v1.35.4 with every staging module replaced by v0.35.4, and the etcd server that v1.35.4 itself
# requires. The cache key is go.mod, go.sum, this script and the Go version: any change builds afresh.
set -euo pipefail
cd "$(dirname "$0")"
key=$( (cat go.mod go.sum build.sh; go version) | sha256sum | cut -c1-16)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/policylang/kube/$key"
build() {  # build NAME PACKAGE: one binary, written whole or not at all
    if [ ! -x "$dir/$1" ]; then
        start=$(date +%s)
        echo "building $1 ($2; the first build takes minutes)..." >&2
        nice -n 10 go build -trimpath -o "$dir/$1.partial" "$2"
        mv "$dir/$1.partial" "$dir/$1"
        echo "built $1 in $(( $(date +%s) - start ))s: $dir/$1" >&2
    fi
}
mkdir -p "$dir"
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
echo "$dir"
