#!/usr/bin/env bash
# Report rendering time on 100,000 samples over 30 Configs (issue 4 asks for < 5 s), against
# `tlslab export` of the same store to CSV: the cost of merely reading every sample once.
#
#   bench/report-render.sh [RESULTS.db]
#
# Without a store it makes one (cached in $TMPDIR/tlslab-bench-report.db): TLS 1.3, three
# suites × five groups × two certificates = 30 Configs, 3,334 handshakes each, 4 agents.
set -euo pipefail
cd "$(dirname "$0")/.."
# tlslab links OpenSSL 4 statically; this builds it once per machine.
scripts/openssl >/dev/null
cargo build --release -q -p tlslab
tlslab=${CARGO_TARGET_DIR:-target}/release/tlslab
store=${1:-${TMPDIR:-/tmp}/tlslab-bench-report.db}
if [ ! -s "$store" ]; then
  echo "making $store (about a minute)"
  $tlslab run --tls 1.3 --suite aes128gcm,aes256gcm,chacha20 \
    --group x25519,secp256r1,secp384r1,x25519mlkem768,secp256r1mlkem768 \
    --cert ecdsa-p256,rsa2048 -n 3334 -c 4 --quiet --out "$store" > /dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

seconds() { # the wall time of a command, in seconds
  local start end
  start=$(date +%s.%N); "$@" > /dev/null 2>&1; end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
samples=$(sqlite3 "$store" 'SELECT COUNT(*) FROM samples WHERE warmup = 0' 2>/dev/null || echo "?")
configs=$(sqlite3 "$store" 'SELECT COUNT(*) FROM configs' 2>/dev/null || echo "?")
html=$(seconds $tlslab report "$store" -o "$work/report.html")
markdown=$(seconds $tlslab report "$store" -o "$work/report.md")
png=$(seconds $tlslab report "$store" -o "$work/report.html" --png "$work/charts")
export=$(seconds $tlslab export "$store" -o "$work/samples.csv")
printf 'store: %s (%s measured samples, %s configs)\n' "$store" "$samples" "$configs"
printf 'report html:       %6.2f s (%s bytes)\n' "$html" "$(stat -c %s "$work/report.html")"
printf 'report md:         %6.2f s\n' "$markdown"
printf 'report html + png: %6.2f s\n' "$png"
printf 'export csv:        %6.2f s (peer: reading every sample once)\n' "$export"
printf 'ratio html/export: %6.2f\n' "$(echo "$html / $export" | bc -l)"
