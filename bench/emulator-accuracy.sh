#!/usr/bin/env bash
# The tun emulator's accuracy, in one run:
#  1. its added-delay error at 20,000 packets/s (forwarder release time and end-to-end UDP
#     one-way delay, both against the configured delay) and its TCP throughput with no delay
#     (the accuracy example of tlslab-emulation);
#  2. real handshakes: measured medians against k × RTT + the same handshake's median at an
#     emulated RTT of 0 (TLS 1.3 over TCP: k = 2; TLS 1.2: k = 3), at several RTTs.
#
#   sudo bench/emulator-accuracy.sh [HANDSHAKES]     (default 40 per config)
#
# Needs root (network namespaces, TUN devices). The peer of step 2 is arithmetic: physics says
# what the medians must be, so the ratio measured / expected is the emulator's error.
set -euo pipefail
cd "$(dirname "$0")/.."
handshakes=${1:-40}
[ "$(id -u)" = 0 ] || { echo "run as root: namespaces and TUN devices need CAP_NET_ADMIN" >&2; exit 3; }
# tlslab links OpenSSL 4 statically; this builds it once per machine.
scripts/openssl >/dev/null
cargo build --release -q -p tlslab -p tlslab-emulation --examples
tlslab=${CARGO_TARGET_DIR:-target}/release/tlslab
accuracy=${CARGO_TARGET_DIR:-target}/release/examples/accuracy
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== forwarder: added-delay error at 20,000 packets/s, 10 ms RTT; throughput with no delay"
"$accuracy" --packets-per-second 20000 --rtt-ms 10 --seconds 3 --throughput-seconds 3

echo
echo "== handshakes: median vs k × RTT + median at RTT 0 (tun emulator, $handshakes per config)"
$tlslab run --emulator tun --tls 1.2,1.3 --rtt 0ms,10ms,50ms,100ms,200ms -n "$handshakes" \
  --warmup 2 --quiet --json --out "$work/rtt.db" > "$work/summary.json"
python3 - "$work/summary.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
base = {}
rows = []
for config in summary["configs"]:
    network, median = config["network"], config["handshake_ms"]["median"]
    version = "1.2" if "tls1.2" in config["label"] else "1.3"
    if network["rtt_ms"] == 0:
        base[version] = median
    rows.append((version, network["rtt_ms"], network["round_trips"], median))
print(f"{'TLS':>4} {'RTT ms':>7} {'k':>2} {'expected ms':>12} {'measured ms':>12} {'error':>8}")
for version, rtt, k, median in sorted(rows):
    expected = k * rtt + base[version]
    print(f"{version:>4} {rtt:>7.0f} {k:>2} {expected:>12.2f} {median:>12.2f} {100 * (median - expected) / expected:>7.2f}%")
PY
