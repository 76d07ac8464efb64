#!/usr/bin/env bash
# HTTP request rate and client CPU per request: tlslab load against h2load, wrk and ab, in one
# run, against the same nginx (one worker, TLS 1.3, X25519, ECDSA P-256, keep-alive, a 3-byte
# response), all at concurrency C over HTTP/1.1 with keep-alive.
#
#   bench/http-rate.sh [REQUESTS] [CONCURRENCY] [ROUNDS]
#       (default 100000 requests, 64 connections, 1 round)
#
# Every client is measured on the same clocks, taken by this script around the whole process
# (bash's `time`): the rate is requests done / the process's wall time (start-up and TLS
# set-up included, and for tlslab storing every request and the summary after the run), and
# client CPU is the process's user + system time per request. tlslab's own trial-time rate
# (which leaves its start-up and summary out) is printed apart, for reference only. With
# ROUNDS > 1 the clients run in turn ROUNDS times and each figure is the median of its rounds
# (the machine may be shared: only figures of the same invocation compare).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
requests=${1:-100000}
concurrency=${2:-64}
rounds=${3:-1}
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "nginx is required: apt-get install nginx-light" >&2; exit 3; }
for tool in h2load wrk ab; do
    command -v $tool >/dev/null || {
        echo "$tool is required: apt-get install nghttp2-client wrk apache2-utils" >&2; exit 3; }
done

scripts/openssl >/dev/null
cargo build --release -q -p tlslab
# TLSLAB=path runs another build (an earlier commit's, to compare before and after a change).
tlslab=${TLSLAB:-${CARGO_TARGET_DIR:-target}/release/tlslab}
work=$(mktemp -d)
trap 'kill $nginx_pid 2>/dev/null || true; rm -rf "$work"' EXIT

eval "$($tlslab pki --cert ecdsa-p256 --chain 1 | sed -E 's/^(chain|key|root) (.*)$/\1="\2"/')"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Keep-alive connections carry every request (nginx closes one after 1000 by default).
write_nginx_conf "$work/nginx.conf" "$work" "$port" "$chain" "$key" \
    "keepalive_requests 1000000; keepalive_timeout 300s;"
"$nginx" -e "$work/error.log" -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
url="https://127.0.0.1:$port/"

TIMEFORMAT='%3R %3U %3S'
# tool name, requests done, wall seconds, user seconds, system seconds (all of the process)
results="$work/results.txt"
# tlslab's trial-time rate, for reference
trials="$work/trials.txt"

for _ in $(seq "$rounds"); do
    { time h2load --h1 -n "$requests" -c "$concurrency" "$url" > "$work/h2load.txt" 2>&1 ; } 2> "$work/h2load.time"
    done=$(grep -oE 'requests: [0-9]+ total, [0-9]+ started, [0-9]+ done, [0-9]+ succeeded' "$work/h2load.txt" | awk '{print $8}')
    echo "h2load $done $(cat "$work/h2load.time")" >> "$results"

    # wrk runs for a time: as long as h2load took.
    seconds=$(awk '{printf "%d", $1 + 1}' "$work/h2load.time")
    { time wrk -t1 -c "$concurrency" -d "${seconds}s" "$url" > "$work/wrk.txt" 2>&1 ; } 2> "$work/wrk.time"
    done=$(grep -oE '^ *[0-9]+ requests in' "$work/wrk.txt" | awk '{print $1}')
    echo "wrk $done $(cat "$work/wrk.time")" >> "$results"

    { time ab -k -n "$requests" -c "$concurrency" "$url" > "$work/ab.txt" 2>&1 ; } 2> "$work/ab.time"
    done=$(grep -E '^Complete requests:' "$work/ab.txt" | awk '{print $3}')
    echo "ab $done $(cat "$work/ab.time")" >> "$results"

    rm -f "$work/tlslab.db"
    { time "$tlslab" load "$url" --sni localhost --ca "$root" -n "$requests" -c "$concurrency" \
        --block "$requests" --warmup "$concurrency" --quiet --json --out "$work/tlslab.db" \
        > "$work/tlslab.json" ; } 2> "$work/tlslab.time"
    read -r done trial_rate < <(python3 -c "
import json; c = json.load(open('$work/tlslab.json'))['configs'][0]
print(c['complete'], c['requests_per_second'])")
    echo "tlslab $done $(cat "$work/tlslab.time")" >> "$results"
    echo "$trial_rate" >> "$trials"
done

python3 - "$results" "$trials" "$concurrency" "$rounds" <<'PY'
import os, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
trial_rates = [float(line) for line in open(sys.argv[2])]
print(f"HTTP/1.1 keep-alive over TLS 1.3 to nginx (1 worker), concurrency {sys.argv[3]}, "
      f"{sys.argv[4]} round(s), medians; load average after: "
      + " ".join(f"{x:.2f}" for x in os.getloadavg()))
print("Same clocks for every client: the whole process's wall time and user + system CPU, "
      "taken by this script (start-up included; for tlslab, storing every request and the "
      "summary too)")
print(f"{'client':<10}{'requests':>10}{'wall s':>9}{'requests/s':>12}{'client CPU us/request':>24}")
figures = {}
for tool in dict.fromkeys(row[0] for row in rows):
    runs = [(float(d), float(w), float(u) + float(s)) for t, d, w, u, s in rows if t == tool]
    done = statistics.median(d for d, _, _ in runs)
    wall = statistics.median(w for _, w, _ in runs)
    rate = statistics.median(d / w for d, w, _ in runs)
    cpu = statistics.median(c / d * 1e6 for d, _, c in runs)
    figures[tool] = (rate, cpu)
    print(f"{tool:<10}{done:>10.0f}{wall:>9.2f}{rate:>12.0f}{cpu:>24.1f}")
rate, cpu = figures["tlslab"]
best = max(rate for tool, (rate, _) in figures.items() if tool != "tlslab")
print(f"tlslab against the fastest peer: rate {rate / best:.2f}x; "
      f"client CPU per request against h2load {cpu / figures['h2load'][1]:.2f}x")
print(f"(tlslab's own trial-time rate, its start-up and summary left out, for reference only: "
      f"{statistics.median(trial_rates):.0f} requests/s)")
PY
