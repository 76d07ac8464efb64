#!/usr/bin/env bash
# Per-request latency of the lab servers (`tlslab serve --backend rustls|openssl`) against
# nginx, as the usual HTTP tools meet them: ApacheBench without keep-alive (a new connection
# and TLS 1.3 handshake per request), h2load over HTTP/2 and HTTP/1.1, wrk, and curl with a new
# connection per transfer. Every tool runs at concurrency 1, so its mean time per request is a
# latency, not a throughput.
#
#   bench/lab-latency.sh [REQUESTS] [ROUNDS]
#       (default 500 and 5: `ab -n 500 -c 1`, curl a fifth as many transfers, h2load twenty
#        times as many requests on its one connection, wrk 3 s; every tool against every server
#        in each round)
#
# TLSLAB=/path/to/tlslab measures that build instead of building this checkout (for a
# before-and-after comparison).
#
# A tool's mean time per request is its wall time over its requests, as ab's "Time per
# request" is (h2load: 1 / its requests per second; wrk: its duration over its requests; curl:
# the mean of its transfers' `time_total`). wrk's own latency average is not used: at
# concurrency 1 a single scheduler pause of a shared machine moves it by a factor of ten.
#
# The servers, all listening at once on the same machine, each measured in turn in every round
# (so a slow moment of a shared machine hits one round; each time is the median of its rounds,
# each ratio the median of the ratios within a round): nginx (one worker) as deployed, and the
# two lab servers as `tlslab serve` starts them; the same ECDSA P-256 certificate (chain of 1),
# TLS 1.3, X25519, a 3-byte response body (nginx's `return 200 "ok\n"`, the lab's `--body 3`).
# The suite is the one every client here (all OpenSSL 3) prefers, TLS_AES_256_GCM_SHA384;
# nginx is held to it, the lab servers follow the client, and the script checks that ab
# reports the same protocol and suite for every server.
#
# Printed: the mean time per request of each tool against each server, and each lab server's
# ratio to nginx (the goal is at most 2x). Then, for the cause of the stall this benchmark was
# written for, nginx configured to send no TLS 1.3 session tickets (`NumTickets 0`) under ab:
# the client's Finished then gets no data in answer, and a client with Nagle on (ab) holds its
# request until the kernel's delayed ACK (40 ms on Linux) unless the server acknowledges at
# once, as the lab servers do (crates/tlslab-backend/src/server_socket.rs).
#
# Caveats: client and server share the machine's cores; ab, h2load and wrk run for a fixed
# count or time, so a busy machine slows every server alike (only ratios of one invocation
# compare). nginx sends two TLS 1.3 tickets per handshake (its default, with or without
# `ssl_session_tickets`), the lab servers none (their default, `--resumption off`).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
requests=${1:-500}
rounds=${2:-5}
curl_transfers=$(( requests / 5 > 0 ? requests / 5 : 1 ))
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "nginx is required: apt-get install nginx-light" >&2; exit 3; }
for tool in ab h2load wrk curl; do
    command -v $tool >/dev/null || {
        echo "$tool is required: apt-get install apache2-utils nghttp2-client wrk curl" >&2
        exit 3
    }
done

tlslab=${TLSLAB:-}
if [ -z "$tlslab" ]; then
    scripts/openssl >/dev/null
    cargo build --release -q -p tlslab
    tlslab=${CARGO_TARGET_DIR:-target}/release/tlslab
fi
work=$(mktemp -d)
pids=()
trap 'for pid in "${pids[@]}"; do kill $pid 2>/dev/null || true; done; rm -rf "$work"' EXIT

eval "$($tlslab pki --cert ecdsa-p256 --chain 1 | sed -E 's/^(chain|key|root) (.*)$/\1="\2"/')"

# Runs every tool against https://127.0.0.1:PORT/ and appends "server tool milliseconds" lines
# to results.txt; ab's protocol line goes to protocols.txt.
measure() {
    local name=$1 port=$2 url="https://127.0.0.1:$2/" out="$work/$1"
    ab -n "$requests" -c 1 "$url" > "$out.ab" 2>&1
    grep -E '^Failed requests: +0$' "$out.ab" > /dev/null ||
        { echo "ab against $name failed:" >&2; cat "$out.ab" >&2; exit 1; }
    echo "$name ab $(sed -nE 's/^Time per request: +([0-9.]+) \[ms\] \(mean\)$/\1/p' "$out.ab")" \
        >> "$work/results.txt"
    echo "$name $(sed -nE 's/^SSL\/TLS Protocol: +//p' "$out.ab")" >> "$work/protocols.txt"
    for protocol in h2 h1; do
        local flag=; [ $protocol = h1 ] && flag=--h1
        local many=$(( requests * 20 ))
        h2load $flag -n "$many" -c 1 "$url" > "$out.h2load-$protocol" 2>&1
        grep -qE "requests: $many total, $many started, $many done, $many succeeded" \
            "$out.h2load-$protocol" ||
            { echo "h2load against $name failed:" >&2; cat "$out.h2load-$protocol" >&2; exit 1; }
        # "finished in 1.23s, 8123.45 req/s, ..."
        echo "$name h2load-$protocol $(sed -nE 's/^finished in [^,]+, ([0-9.]+) req\/s.*/\1/p' \
            "$out.h2load-$protocol" | awk '{print 1000 / $1}')" >> "$work/results.txt"
    done
    wrk -t1 -c1 -d3s "$url" > "$out.wrk" 2>&1
    grep -qE 'Socket errors|Non-2xx' "$out.wrk" &&
        { echo "wrk against $name failed:" >&2; cat "$out.wrk" >&2; exit 1; }
    # "  12345 requests in 3.00s, ..."
    echo "$name wrk $(sed -nE 's/^ *([0-9]+) requests in ([0-9.]+)s,.*/\1 \2/p' "$out.wrk" |
        awk '{print $2 * 1000 / $1}')" >> "$work/results.txt"
    # A new connection (and handshake) per transfer: curl closes each, as the header asks.
    local urls=()
    for _ in $(seq "$curl_transfers"); do urls+=("$url" -o /dev/null); done
    curl -sS --http1.1 -H 'Connection: close' --cacert "$root" \
        --resolve "localhost:$port:127.0.0.1" -w '%{http_code} %{num_connects} %{time_total}\n' \
        "${urls[@]}" > "$out.curl"
    python3 - "$out.curl" "$name" "$curl_transfers" >> "$work/results.txt" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1])]
assert len(rows) == int(sys.argv[3]), rows
assert all(code == "200" and connects == "1" for code, connects, _ in rows), rows
print(sys.argv[2], "curl", sum(float(seconds) for *_, seconds in rows) / len(rows) * 1e3)
PY
}

declare -A ports
# Starts nginx with the DIRECTIVES under NAME (its state in a directory of its own).
start_nginx() {
    local name=$1 directives=$2 port
    port=$(free_port)
    mkdir -p "$work/$name"
    write_nginx_conf "$work/$name/nginx.conf" "$work/$name" "$port" "$chain" "$key" \
        "ssl_conf_command Ciphersuites TLS_AES_256_GCM_SHA384; keepalive_requests 1000000; $directives"
    # nginx before 1.25 enables HTTP/2 on the listen line.
    sed -i "s/listen 127.0.0.1:$port ssl;/listen 127.0.0.1:$port ssl http2;/" "$work/$name/nginx.conf"
    "$nginx" -e "$work/$name/error.log" -p "$work/$name" -c "$work/$name/nginx.conf" &
    pids+=($!)
    wait_port $! $port "$work/$name/error.log"
    ports[$name]=$port
}

# nginx, one worker, as deployed (it sends two TLS 1.3 tickets per handshake), and the lab
# servers.
start_nginx nginx ""
for backend in rustls openssl; do
    port=$(free_port)
    "$tlslab" serve --backend $backend --cert ecdsa-p256 --chain 1 --body 3 \
        --listen 127.0.0.1:$port 2> "$work/$backend.err" &
    pids+=($!)
    wait_port $! $port "$work/$backend.err"
    ports[$backend]=$port
done
for _ in $(seq "$rounds"); do
    for server in nginx rustls openssl; do
        measure $server ${ports[$server]}
    done
done

# What the lab servers' immediate ACK avoids: nginx without tickets, under ab alone.
stall_requests=$(( requests / 10 > 0 ? requests / 10 : 1 ))
start_nginx stall "ssl_conf_command NumTickets 0;"
ab -n "$stall_requests" -c 1 "https://127.0.0.1:${ports[stall]}/" > "$work/stall.ab" 2>&1
stall=$(sed -nE 's/^Time per request: +([0-9.]+) \[ms\] \(mean\)$/\1/p' "$work/stall.ab")

if [ "$(cut -d' ' -f2- "$work/protocols.txt" | sort -u | wc -l)" != 1 ]; then
    echo "the servers negotiated different protocols or suites with ab:" >&2
    cat "$work/protocols.txt" >&2
    exit 1
fi
nginx_openssl=$("$nginx" -V 2>&1 | sed -nE 's/^built with (OpenSSL [^ ]+).*/\1/p')
echo "machine: $(nproc) CPUs, $(sed -nE 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "servers: nginx $("$nginx" -v 2>&1 | sed 's|.*/||') with ${nginx_openssl:-OpenSSL ?} (1 worker);" \
    "tlslab serve --backend rustls / openssl; ECDSA P-256, X25519," \
    "$(head -1 "$work/protocols.txt" | cut -d' ' -f2)"
echo "rounds: $rounds; each time is the median of its rounds, each ratio the median of the rounds' ratios"
echo "clients: ab -n $requests -c 1 (no keep-alive); h2load -n $(( requests * 20 )) -c 1 (one" \
    "connection, h2 and --h1); wrk -t1 -c1 -d3s; curl --http1.1, $curl_transfers transfers, one" \
    "connection each"
python3 - "$work/results.txt" "$stall" "$stall_requests" <<'PY'
import sys
import statistics
rounds = {}
for line in open(sys.argv[1]):
    server, tool, value = line.split()
    rounds.setdefault((server, tool), []).append(float(value))
values = {key: statistics.median(found) for key, found in rounds.items()}
def ratio(server, tool):
    pairs = zip(rounds[(server, tool)], rounds[("nginx", tool)])
    return statistics.median(lab / nginx for lab, nginx in pairs)
tools = ["ab", "h2load-h2", "h2load-h1", "wrk", "curl"]
labels = {"ab": "ab, new connection each", "h2load-h2": "h2load, HTTP/2",
          "h2load-h1": "h2load, HTTP/1.1", "wrk": "wrk, keep-alive", "curl": "curl, new connection each"}
print(f"{'mean ms per request':<28}{'nginx':>9}{'rustls':>9}{'openssl':>9}{'rustls/nginx':>14}{'openssl/nginx':>15}")
worst = 0.0
for tool in tools:
    n, r, o = (values[(server, tool)] for server in ("nginx", "rustls", "openssl"))
    rustls, openssl = ratio("rustls", tool), ratio("openssl", tool)
    worst = max(worst, rustls, openssl)
    print(f"{labels[tool]:<28}{n:>9.3f}{r:>9.3f}{o:>9.3f}{rustls:>13.2f}x{openssl:>14.2f}x")
print(f"largest ratio to nginx: {worst:.2f}x (goal: at most 2x)")
print(f"nginx without tickets (NumTickets 0), ab -n {sys.argv[3]} -c 1: {float(sys.argv[2]):.3f} ms"
      " per request (the client's Finished waits for a delayed ACK)")
PY
