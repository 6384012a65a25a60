#!/usr/bin/env bash
# Build the oracle for one Kubernetes version (1.37, the default, 1.36, 1.35 or 1.34) once into a cache
# outside the source tree and print the binary's path; `build.sh all` builds every version, one path a line.
#
# One copy of the Go sources serves every version: 1.35 builds with go.mod/go.sum (k8s.io/kubernetes
# v1.35.4), 1.34, 1.36 and 1.37 with k8s-1.3X.mod/k8s-1.3X.sum (v1.34.4, v1.36.3, v1.37.2) and the
# k8s1.3X build tag, which picks the api_k8s13X.go file where the framework's API differs. v1.36 and
# v1.37 need Go 1.26 (their go.mod's `go` line): an older go fetches it through the module proxy
# (GOTOOLCHAIN=auto, Go's default). The cache key is the version's
# module files, the sources and the Go version, so any change to them (or a new toolchain) builds
# afresh; an unchanged tree reuses the binary.
#
# Builds into one cache entry take turns (flock(1), util-linux, on the entry's .lock): a second build
# started meanwhile (another checkout, CI beside a developer) waits, then finds the binary the first
# made and prints its path. Without flock (not Linux) builds do not wait, but each writes its own
# partial file, so two at once only cost the time of both.
set -euo pipefail
cd "$(dirname "$0")"
versions=("${1:-1.37}")
if [ "${versions[0]}" = all ]; then versions=(1.37 1.36 1.35 1.34); fi

build() {
    local version=$1 mod sum flags=()
    case "$version" in
        1.35) mod=go.mod; sum=go.sum ;;
        1.34|1.36|1.37) mod=k8s-$version.mod; sum=k8s-$version.sum; flags=(-modfile="$mod" -tags="k8s$version") ;;
        *) echo "build.sh: unknown Kubernetes version '$version' (1.34, 1.35, 1.36, 1.37 or all)" >&2; return 2 ;;
    esac
    local key dir start
    key=$( (echo "$version"; cat "$mod" "$sum" ./*.go; go version) | sha256sum | cut -c1-16)
    dir="${XDG_CACHE_HOME:-$HOME/.cache}/policylang/oracle/$key"
    if [ ! -x "$dir/oracle" ]; then
        mkdir -p "$dir"
        lock "$dir"
        if [ ! -x "$dir/oracle" ]; then   # unless the build we waited for made it
            start=$(date +%s)
            echo "building the oracle for Kubernetes $version (k8s.io/kubernetes; the first build takes minutes)..." >&2
            local partial="$dir/oracle.partial.$$"
            # go is not handed the lock's descriptor: nothing it leaves running could hold the lock.
            go build -trimpath "${flags[@]}" -o "$partial" . 9>&- || { rm -f "$partial"; return 1; }
            mv "$partial" "$dir/oracle"
            echo "built the oracle for Kubernetes $version in $(( $(date +%s) - start ))s: $dir/oracle" >&2
        fi
        exec 9>&-   # the lock released: a build waiting on it goes on, and finds the binary
    fi
    echo "$dir/oracle"
}

# lock DIR: hold the lock of the cache entry DIR on descriptor 9, waiting while another build holds
# it, until `exec 9>&-` or the end of the script however it ends (the kernel releases it then).
lock() {
    exec 9>"$1/.lock"
    command -v flock >/dev/null 2>&1 || return 0
    if ! flock -n 9; then
        echo "waiting for another build into $1 to finish..." >&2
        flock 9
    fi
}

for v in "${versions[@]}"; do build "$v"; done
