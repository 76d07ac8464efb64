#!/usr/bin/env bash
# Full scans of the same local nginx (Mozilla's intermediate 5.7 level, ECDSA P-256 lab
# chain) by tlslab, testssl.sh and sslyze, in one run: wall time, and connections made as
# tcpdump counts them (SYNs to the port, the same count for every tool; tlslab's own count
# is printed beside it). The issue asks for at least 10× testssl.sh and faster than sslyze.
#
#   bench/scan-speed.sh
#
# Each tool runs its default full scan: `testssl` with no test options (protocols, suites
# per protocol, groups, certificate, vulnerabilities, client simulation), `sslyze` with its
# default scan commands, `tlslab scan`. Needs root (tcpdump), nginx, testssl (Debian's
# testssl.sh package) and sslyze (pip install sslyze). TLSLAB=PATH uses that binary
# instead of building the release one.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "nginx is required: apt-get install nginx-light" >&2; exit 3; }
testssl=$(command -v testssl || command -v testssl.sh || true)
[ -n "$testssl" ] || { echo "testssl.sh is required: apt-get install testssl.sh" >&2; exit 3; }
command -v sslyze >/dev/null || { echo "sslyze is required: pip install sslyze" >&2; exit 3; }
command -v tcpdump >/dev/null || { echo "tcpdump is required: apt-get install tcpdump" >&2; exit 3; }

if [ -z "${TLSLAB:-}" ]; then
  scripts/openssl >/dev/null
  cargo build --release -q -p tlslab
fi
tlslab=${TLSLAB:-${CARGO_TARGET_DIR:-target}/release/tlslab}
work=$(mktemp -d)
trap 'kill $nginx_pid 2>/dev/null || true; rm -rf "$work"' EXIT

eval "$($tlslab pki --cert ecdsa-p256 --chain 2 | sed -E 's/^(chain|key|root) (.*)$/\1="\2"/')"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Mozilla's intermediate 5.7 for nginx (ssl-config.mozilla.org).
intermediate="ssl_protocols TLSv1.2 TLSv1.3; ssl_ecdh_curve X25519:prime256v1:secp384r1;
    ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305;
    ssl_prefer_server_ciphers off; ssl_session_tickets off;"
write_nginx_conf "$work/nginx.conf" "$work" "$port" "$chain" "$key" "" "$intermediate"
"$nginx" -e "$work/error.log" -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done

# measure NAME COMMAND...: wall seconds and connections (SYNs to the port) of COMMAND.
measure() {
  local name=$1
  shift
  : > "$work/$name.tcpdump"
  # --immediate-mode: without it the kernel hands packets over in blocks, and a short
  # capture's last block is lost when tcpdump stops.
  tcpdump -i lo -nn --immediate-mode -U -w "$work/$name.pcap" \
    "tcp dst port $port and tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn" 2> "$work/$name.tcpdump" &
  local recorder=$!
  until grep -q "listening on" "$work/$name.tcpdump"; do sleep 0.1; done
  # sslyze exits 1 when the server does not comply with Mozilla's level (here: the lab
  # certificate's lifespan and trust); only a scan with no output is a failure.
  /usr/bin/time -q -f '%e' -o "$work/$name.time" "$@" > "$work/$name.out" 2> "$work/$name.err" || true
  if [ ! -s "$work/$name.out" ]; then
    echo "$name failed:" >&2
    tail -5 "$work/$name.err" >&2
    exit 1
  fi
  sleep 0.5
  kill -INT "$recorder"
  wait "$recorder" || true
  echo "$(cat "$work/$name.time") $(tcpdump -r "$work/$name.pcap" 2>/dev/null | wc -l)"
}
read -r tlslab_seconds tlslab_connections < <(measure tlslab \
  $tlslab scan "127.0.0.1:$port" --sni localhost --json)
read -r testssl_seconds testssl_connections < <(measure testssl \
  "$testssl" --quiet --color 0 --warnings off --ip 127.0.0.1 "https://localhost:$port")
read -r sslyze_seconds sslyze_connections < <(measure sslyze \
  sslyze --quiet "localhost:$port{127.0.0.1}")
tlslab_own=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["connections"])' "$work/tlslab.out")

rate() { echo "$1 / $2" | bc -l; }
printf 'nginx %s as Mozilla intermediate 5.7 on 127.0.0.1:%s\n' "$("$nginx" -v 2>&1 | sed 's/.*nginx\///')" "$port"
printf '%-10s %10s %12s\n' tool seconds connections
printf '%-10s %10.2f %12s   (tlslab counted %s)\n' tlslab "$tlslab_seconds" "$tlslab_connections" "$tlslab_own"
printf '%-10s %10.2f %12s\n' testssl "$testssl_seconds" "$testssl_connections"
printf '%-10s %10.2f %12s\n' sslyze "$sslyze_seconds" "$sslyze_connections"
printf 'ratio: tlslab is %.1f× testssl.sh and %.1f× sslyze\n' \
  "$(rate "$testssl_seconds" "$tlslab_seconds")" "$(rate "$sslyze_seconds" "$tlslab_seconds")"
