#!/usr/bin/env bash
# How close a run's wire events are to its packets (`tlslab run --capture`'s cross-check), and
# the client CPU per handshake, for each backend and TLS version, at concurrency 1 on loopback.
# Needs root (the run records its own packets).
#
#   bench/wire-times.sh [N] [BINARY...]      (default 1000 handshakes; the release build)
#
# With several binaries (a build before a change and one after), each combination runs with
# each binary in turn, so the machine's drift falls on all alike. Prints, per run, the
# cross-check's median and p99 |run − wire| in µs per event, and the run's own client CPU per
# handshake (`-v`: the client process's user + system time over the measured trials).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
shift || true
if [ $# -eq 0 ]; then
    scripts/openssl >/dev/null
    cargo build --release -q -p tlslab
    set -- "${CARGO_TARGET_DIR:-target}/release/tlslab"
fi
[ "$(id -u)" -eq 0 ] || { echo "the run's capture needs root" >&2; exit 3; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for backend in rustls openssl; do
    for version in 1.2 1.3; do
        for binary in "$@"; do
            out="$work/run.txt"
            "$binary" run -c 1 -n "$n" --warmup 0 --backend "$backend" --tls "$version" -v \
                --capture "$work/cc.pcap" --out "$work/run.db" > "$out"
            cpu=$(grep -oE 'client CPU [0-9.]+ ms/handshake' "$out" | grep -oE '[0-9.]+' || echo "?")
            echo "== $backend TLS $version, $binary: client CPU $cpu ms/handshake"
            sed -n '/^cross-check/,$p' "$out"
            rm -f "$work/run.db" "$work/run.db-wal" "$work/run.db-shm" "$work/cc.pcap"
        done
    done
done
