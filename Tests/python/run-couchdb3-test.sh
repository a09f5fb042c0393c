#!/usr/bin/env bash
# Runs the couchdb3 client test against a fresh `syncd serve` with a server
# admin (cookie login). Exits non-zero on failure.
# Usage: Tests/python/run-couchdb3-test.sh [path/to/syncd]   (needs: pip install couchdb3)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
syncd="${1:-${SYNCD_BINARY:-$here/../../.build/debug/syncd}}"
work="$(mktemp -d)"
pid=""
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

serve() {
    : >"$work/$1.out"  # exists before the loop reads it, whenever the background job opens it
    "$syncd" serve --data "$work/$1" --port 0 "${@:2}" >"$work/$1.out" 2>&1 &
    pid=$!
    # Up to 60 s, as Tests/SyncAgentTests/Support/ServeProcess.swift: a
    # ThreadSanitizer build takes more than 10 s to start on 2 busy cores.
    for _ in $(seq 600); do
        url="$(sed -n 's/^listening on //p' "$work/$1.out" | head -1)"
        [ -n "$url" ] && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "syncd serve printed no URL:" >&2
    cat "$work/$1.out" >&2
    return 1
}

mkdir -p "$work/auth"
printf 'py-test-password\n' | "$syncd" user add pytester --admin --data "$work/auth" >/dev/null
serve auth
python3 "$here/couchdb3_client_test.py" "$url" --user pytester --password py-test-password
kill "$pid"; wait "$pid"; pid=""
