#!/usr/bin/env bash
# Build the oracle for one Kubernetes version (1.35, the default, or 1.34) once into a cache outside
# the source tree and print the binary's path; `build.sh all` builds every version, one path a line.
#
# One copy of the Go sources serves every version: 1.35 builds with go.mod/go.sum (k8s.io/kubernetes
# v1.35.4), 1.34 with k8s-1.34.mod/k8s-1.34.sum (v1.34.4) and the k8s1.34 build tag, which picks
# api_k8s134.go over api_k8s135.go where the framework's API differs. The cache key is the version's
# module files, the sources and the Go version, so any change to them (or a new toolchain) builds
# afresh; an unchanged tree reuses the binary.
set -euo pipefail
cd "$(dirname "$0")"
versions=("${1:-1.35}")
if [ "${versions[0]}" = all ]; then versions=(1.35 1.34); fi

build() {
    local version=$1 mod sum flags=()
    case "$version" in
        1.35) mod=go.mod; sum=go.sum ;;
        1.34) mod=k8s-1.34.mod; sum=k8s-1.34.sum; flags=(-modfile="$mod" -tags=k8s1.34) ;;
        *) echo "build.sh: unknown Kubernetes version '$version' (1.34, 1.35 or all)" >&2; return 2 ;;
    esac
    local key dir start
    key=$( (echo "$version"; cat "$mod" "$sum" ./*.go; go version) | sha256sum | cut -c1-16)
    dir="${XDG_CACHE_HOME:-$HOME/.cache}/policylang/oracle/$key"
    if [ ! -x "$dir/oracle" ]; then
        mkdir -p "$dir"
        start=$(date +%s)
        echo "building the oracle for Kubernetes $version (k8s.io/kubernetes; the first build takes minutes)..." >&2
        go build -trimpath "${flags[@]}" -o "$dir/oracle.partial" .
        mv "$dir/oracle.partial" "$dir/oracle"
        echo "built the oracle for Kubernetes $version in $(( $(date +%s) - start ))s: $dir/oracle" >&2
    fi
    echo "$dir/oracle"
}

for v in "${versions[@]}"; do build "$v"; done
