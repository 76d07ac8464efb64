#!/usr/bin/env bash
# Server handshake rate and server CPU per handshake: the rustls lab server, the OpenSSL 4 lab
# server (`tlslab serve --backend rustls|openssl`) and nginx, one after another, each with the
# same certificate (ECDSA P-256, chain of 1), TLS 1.3, TLS_AES_128_GCM_SHA256, X25519, fresh
# full handshakes (no tickets, no resumption), certificates verified by the client.
#
#   bench/server-rate.sh [HANDSHAKES] [CONCURRENCY]      (default 20000 and 8)
#
# The load generator is `tlslab run --target` (rustls client) with the same flags for all three
# servers, HANDSHAKES measured plus 100 warm-up handshakes. Server CPU is user + system time of
# the server process from /proc/PID/stat (fields 14 and 15, all threads, in clock ticks) just
# before and just after the run, divided by the handshakes attempted (measured + warm-up).
#
# Caveats:
#  - The lab servers are multi-threaded (tokio, one worker per core); nginx runs one worker
#    (master_process off). Handshakes/s therefore compares a server that may use every core with
#    one that uses one; CPU per handshake does not depend on that and is the fairer number.
#  - The load generator runs on the same machine: on a small machine it shares the cores with
#    the server, so handshakes/s is bounded by both client and server, not by the server alone.
#  - CPU is counted in clock ticks (usually 10 ms): use enough handshakes that each server
#    spends at least a few hundred ticks, or the CPU figures are coarse.
#  - nginx links the system OpenSSL (3.x), the OpenSSL lab server a static OpenSSL 4. No HTTP
#    request is sent: every server does the handshake and then sees the client's reset.
#  - `ssl_session_tickets off` alone still lets nginx's OpenSSL send two stateful TLS 1.3 tickets
#    per handshake; `ssl_conf_command NumTickets 0` stops them, as the lab servers send none.
#    Without ssl_conf_command support (checked with nginx -t) nginx keeps sending them.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
handshakes=${1:-20000}
concurrency=${2:-8}
warmup=100
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "nginx is required: apt-get install nginx-light" >&2; exit 3; }

scripts/openssl >/dev/null
cargo build --release -q -p tlslab
tlslab=${CARGO_TARGET_DIR:-target}/release/tlslab
work=$(mktemp -d)
server_pid=
trap 'if [ -n "$server_pid" ]; then kill $server_pid 2>/dev/null || true; fi; rm -rf "$work"' EXIT

eval "$($tlslab pki --cert ecdsa-p256 --chain 1 | sed -E 's/^(chain|key|root) (.*)$/\1="\2"/')"
clk_tck=$(getconf CLK_TCK)

# utime + stime of a process (all its threads), in clock ticks. The command name (field 2)
# may hold spaces, so count fields after its closing parenthesis: field 14 is the 12th there.
cpu_ticks() { sed -E 's/^.*\) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

# Runs tlslab against the server on the port and appends "name rate attempted ok cpu_ticks".
measure() {
    local name=$1 pid=$2 port=$3 before after
    before=$(cpu_ticks "$pid")
    "$tlslab" run --target 127.0.0.1:$port --sni localhost --ca "$root" --tls 1.3 --suite aes128gcm \
        --group x25519 -n "$handshakes" -c "$concurrency" --warmup "$warmup" --quiet --json \
        --out "$work/$name.db" > "$work/$name.json"
    after=$(cpu_ticks "$pid")
    python3 - "$work/$name.json" "$name" "$((after - before))" >> "$work/results.txt" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))["configs"][0]
print(sys.argv[2], config["handshakes_per_second"], config["attempted"], config["ok"], sys.argv[3])
PY
}

stop() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
}

# 1 and 2: the lab servers.
for backend in rustls openssl; do
    port=$(free_port)
    "$tlslab" serve --backend $backend --cert ecdsa-p256 --chain 1 --listen 127.0.0.1:$port \
        2> "$work/$backend.err" &
    server_pid=$!
    wait_port $server_pid $port "$work/$backend.err"
    measure $backend $server_pid $port
    stop
done
openssl_version=$(sed -nE 's/.* TCP \((OpenSSL [^;]*);.*/\1/p' "$work/openssl.err" | head -1)

# 3: nginx, one worker.
port=$(free_port)
write_nginx_conf "$work/nginx.conf" "$work" "$port" "$chain" "$key" \
    "ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256; ssl_conf_command NumTickets 0;"
if ! "$nginx" -t -q -e "$work/error.log" -p "$work" -c "$work/nginx.conf" 2>/dev/null; then
    echo "note: this nginx has no ssl_conf_command: the client alone restricts the suite," \
        "and nginx sends TLS 1.3 tickets the lab servers do not" >&2
    write_nginx_conf "$work/nginx.conf" "$work" "$port" "$chain" "$key"
fi
"$nginx" -e "$work/error.log" -p "$work" -c "$work/nginx.conf" &
server_pid=$!
wait_port $server_pid $port "$work/error.log"
measure nginx $server_pid $port
stop

nginx_openssl=$("$nginx" -V 2>&1 | sed -nE 's/^built with (OpenSSL [^ ]+).*/\1/p')
rustls_version=$(grep -A1 '^name = "rustls"$' Cargo.lock | sed -nE 's/^version = "(.*)"/\1/p' | head -1)
echo "machine: $(nproc) CPUs, $(sed -nE 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "servers: rustls ${rustls_version:-?}; ${openssl_version:-OpenSSL (version not printed)};" \
    "nginx $("$nginx" -v 2>&1 | sed 's|.*/||') with ${nginx_openssl:-OpenSSL ?}"
echo "load: tlslab run, $handshakes handshakes + $warmup warm-up, concurrency $concurrency;" \
    "TLS 1.3, TLS_AES_128_GCM_SHA256, X25519, ECDSA P-256"
python3 - "$work/results.txt" "$clk_tck" "$warmup" <<'PY'
import sys
tick, warmup = float(sys.argv[2]), int(sys.argv[3])
rows = {}
for line in open(sys.argv[1]):
    name, rate, attempted, ok, ticks = line.split()
    rate, attempted, ok, ticks = float(rate), int(attempted), int(ok), int(ticks)
    cpu_ms = ticks / tick * 1e3 / (attempted + warmup)
    rows[name] = (rate, attempted, ok, ticks, cpu_ms)
labels = {"rustls": "lab server rustls", "openssl": "lab server openssl", "nginx": "nginx (1 worker)"}
print(f"{'server':<20}{'ok':>8}{'failed':>8}{'handshakes/s':>14}{'CPU ticks':>11}{'server CPU ms/handshake':>25}")
for name, (rate, attempted, ok, ticks, cpu_ms) in rows.items():
    print(f"{labels[name]:<20}{ok:>8}{attempted - ok:>8}{rate:>14.0f}{ticks:>11}{cpu_ms:>25.4f}")
n_rate, n_cpu = rows["nginx"][0], rows["nginx"][4]
for name in ("rustls", "openssl"):
    rate, cpu_ms = rows[name][0], rows[name][4]
    cpu_ratio = f"{cpu_ms / n_cpu:.2f}x" if n_cpu else "n/a"
    print(f"ratio {name}/nginx: rate {rate / n_rate:.2f}x, server CPU per handshake {cpu_ratio}")
PY
