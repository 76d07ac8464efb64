#!/usr/bin/env bash
# Handshake rate and client CPU per handshake: tlslab vs `openssl s_time -new`, in one run,
# against the same nginx (TLS 1.3, X25519, ECDSA P-256, fresh handshakes, certificates verified).
#
#   bench/handshake-rate.sh [SECONDS]        (default 10 s per tool)
#
# Both clients run one connection at a time (s_time cannot do more), so the rates compare
# like with like; client CPU is the user + system time of each client process.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
seconds=${1:-10}
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "nginx is required: apt-get install nginx-light" >&2; exit 3; }
command -v openssl >/dev/null || { echo "openssl is required: apt-get install openssl" >&2; exit 3; }

# tlslab links OpenSSL 4 statically; this builds it once per machine.
scripts/openssl >/dev/null
cargo build --release -q -p tlslab
tlslab=${CARGO_TARGET_DIR:-target}/release/tlslab
work=$(mktemp -d)
trap 'kill $nginx_pid 2>/dev/null || true; rm -rf "$work"' EXIT

eval "$($tlslab pki --cert ecdsa-p256 --chain 1 | sed -E 's/^(chain|key|root) (.*)$/\1="\2"/')"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
write_nginx_conf "$work/nginx.conf" "$work" "$port" "$chain" "$key"
"$nginx" -e "$work/error.log" -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done

# CPU seconds (user + system) of a command, and its output, via bash's `time`.
TIMEFORMAT='%U %S'
openssl_out="$work/openssl.txt"
{ time openssl s_time -connect 127.0.0.1:$port -new -tls1_3 -CAfile "$root" -verify 1 -time "$seconds" > "$openssl_out" 2>&1 ; } 2> "$work/openssl.time"
openssl_handshakes=$(grep -oE '^[0-9]+ connections in [0-9.]+' "$openssl_out" | head -1 | awk '{print $1}')
openssl_wall=$(grep -oE '^[0-9]+ connections in [0-9.]+' "$openssl_out" | head -1 | awk '{print $4}')
openssl_cpu=$(awk '{print $1 + $2}' "$work/openssl.time")

# tlslab: as many handshakes as s_time managed, so both take about the same time.
n=${openssl_handshakes:-5000}
{ time "$tlslab" run --target 127.0.0.1:$port --sni localhost --ca "$root" --tls 1.3 --group x25519 \
    -n "$n" -c 1 --warmup 0 --quiet --json --out "$work/tlslab.db" > "$work/tlslab.json" ; } 2> "$work/tlslab.time"
tlslab_rate=$(python3 -c "import json; print(json.load(open('$work/tlslab.json'))['configs'][0]['handshakes_per_second'])")
tlslab_ok=$(python3 -c "import json; print(json.load(open('$work/tlslab.json'))['configs'][0]['ok'])")
tlslab_cpu=$(awk '{print $1 + $2}' "$work/tlslab.time")

python3 - "$openssl_handshakes" "$openssl_wall" "$openssl_cpu" "$tlslab_ok" "$tlslab_rate" "$tlslab_cpu" <<'PY'
import sys
o_n, o_wall, o_cpu, t_n, t_rate, t_cpu = (float(v) for v in sys.argv[1:])
o_rate = o_n / o_wall
o_per = o_cpu / o_n * 1e3
t_per = t_cpu / t_n * 1e3
print(f"{'client':<18}{'handshakes':>11}{'handshakes/s':>14}{'client CPU ms/handshake':>26}")
print(f"{'openssl s_time':<18}{o_n:>11.0f}{o_rate:>14.0f}{o_per:>26.3f}")
print(f"{'tlslab':<18}{t_n:>11.0f}{t_rate:>14.0f}{t_per:>26.3f}")
print(f"ratio tlslab/openssl: rate {t_rate / o_rate:.2f}x, client CPU per handshake {t_per / o_per:.2f}x")
PY
