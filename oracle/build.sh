#!/usr/bin/env bash
# Build the oracle once into a cache outside the source tree and print the binary's path.
# The cache key is the module's go.mod, go.sum and sources, and the Go version, so any change
# to them (or a new toolchain) builds afresh; an unchanged tree reuses the binary.
set -euo pipefail
cd "$(dirname "$0")"
key=$( (cat go.mod go.sum ./*.go; go version) | sha256sum | cut -c1-16)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/policylang/oracle/$key"
if [ ! -x "$dir/oracle" ]; then
    mkdir -p "$dir"
    start=$(date +%s)
    echo "building the oracle (k8s.io/kubernetes; the first build takes minutes)..." >&2
    go build -trimpath -o "$dir/oracle.partial" .
    mv "$dir/oracle.partial" "$dir/oracle"
    echo "built the oracle in $(( $(date +%s) - start ))s: $dir/oracle" >&2
fi
echo "$dir/oracle"
