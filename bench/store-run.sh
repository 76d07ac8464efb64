#!/usr/bin/env bash
# What the store costs a run, PostgreSQL against SQLite, in one invocation:
#
# - `tlslab load` (REQUESTS requests, 64 kept connections, against a one-worker nginx) and
#   `tlslab run` (HANDSHAKES TLS 1.3 handshakes, 4 at a time, against the embedded lab
#   server), each into a new SQLite file and into a throw-away PostgreSQL cluster: the
#   client's CPU per request and per handshake (user + system of the whole process, bash's
#   `time`; the lab server is a child and counted alike in both).
# - `tlslab report --format md` and `tlslab compare --json` reading a load run of READ
#   requests (two Configs: two suites) back from each store: wall time and peak memory.
#
#   bench/store-run.sh [REQUESTS] [HANDSHAKES] [READ] [ROUNDS]
#       (default 100000 requests, 3000 handshakes, 1000000 requests to read, 3 rounds)
#
# Each figure is the median of ROUNDS; ratios are PostgreSQL's over SQLite's.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
requests=${1:-100000}
handshakes=${2:-3000}
read=${3:-1000000}
rounds=${4:-3}
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "nginx is required: apt-get install nginx-light" >&2; exit 3; }
scripts/openssl >/dev/null
cargo build --release -q -p tlslab
tlslab=${TLSLAB:-${CARGO_TARGET_DIR:-target}/release/tlslab}

work=$(mktemp -d)
start_postgres "$work"
trap 'kill ${nginx_pid:-0} 2>/dev/null || true; stop_postgres; rm -rf "$work"' EXIT
eval "$($tlslab pki --cert ecdsa-p256 --chain 1 | sed -E 's/^(chain|key|root) (.*)$/\1="\2"/')"
port=$(free_port)
write_nginx_conf "$work/nginx.conf" "$work" "$port" "$chain" "$key" \
    "keepalive_requests 10000000; keepalive_timeout 300s;"
"$nginx" -e "$work/error.log" -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!
wait_port "$nginx_pid" "$port" "$work/error.log"
url="https://127.0.0.1:$port/"

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
TIMEFORMAT='%3R %3U %3S'
# cpu_per COUNT COMMAND...: the command's CPU (user + system) per COUNT, in microseconds.
cpu_per() {
    local count=$1; shift
    { time "$@" > /dev/null 2>&1 ; } 2> "$work/time"
    awk -v n="$count" '{ printf "%.2f\n", ($2 + $3) * 1e6 / n }' "$work/time"
}
store() { # kind round: a new store of that kind
    if [ "$1" = sqlite ]; then rm -f "$work/$2.db"; echo "$work/$2.db"; else echo "$pg_url"; fi
}
for kind in sqlite postgres; do
    for round in $(seq "$rounds"); do
        cpu_per "$requests" "$tlslab" load "$url" --sni localhost --ca "$root" -n "$requests" \
            -c 64 --block "$requests" --warmup 64 --quiet --store "$(store $kind load$round)"
    done | median > "$work/load-$kind"
    for round in $(seq "$rounds"); do
        cpu_per "$handshakes" "$tlslab" run --tls 1.3 -n "$handshakes" -c 4 --warmup 40 --quiet \
            --store "$(store $kind run$round)"
    done | median > "$work/run-$kind"
done

# The stores read back: one large load run in each, of two Configs (two TLS 1.3 suites, half
# the requests each) so that compare has two to compare.
rm -f "$work/read.db"
half=$((read / 2))
"$tlslab" load "$url" --sni localhost --ca "$root" --suite aes128gcm,chacha20 -n "$half" -c 64 --block "$half" \
    --warmup 64 --quiet --store "$work/read.db" > /dev/null
"$tlslab" load "$url" --sni localhost --ca "$root" --suite aes128gcm,chacha20 -n "$half" -c 64 --block "$half" \
    --warmup 64 --quiet --store "$pg_url" > /dev/null
# read_time STORE COMMAND...: wall seconds and peak memory (MB) of reading STORE.
read_time() {
    local store=$1; shift
    for _ in $(seq "$rounds"); do
        /usr/bin/time -f '%e %M' "$tlslab" "$@" "$store" > /dev/null 2> "$work/read.time" || {
            echo "reading $store failed:" >&2; cat "$work/read.time" >&2; exit 1; }
        tail -1 "$work/read.time"
    done | sort -n | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }'
}
report_sqlite=$(read_time "$work/read.db" report --format md -o "$work/r1.md")
report_postgres=$(read_time "$pg_url" report --format md -o "$work/r2.md")
compare_sqlite=$(read_time "$work/read.db" compare --json)
compare_postgres=$(read_time "$pg_url" compare --json)

printf '%-44s %12s %12s %8s\n' "(median of $rounds; load average $(cut -d' ' -f1-3 /proc/loadavg))" SQLite PostgreSQL ratio
line() { printf '%-44s %12s %12s %8s\n' "$1" "$2" "$3" "$(awk -v a="$2" -v b="$3" 'BEGIN { printf "%.2fx", b / a }')"; }
line "load: client CPU per request (µs)" "$(cat "$work/load-sqlite")" "$(cat "$work/load-postgres")"
line "run: client CPU per handshake (µs)" "$(cat "$work/run-sqlite")" "$(cat "$work/run-postgres")"
line "report of $read requests (s)" "${report_sqlite% *}" "${report_postgres% *}"
line "compare of $read requests (s)" "${compare_sqlite% *}" "${compare_postgres% *}"
line "report: peak memory (MB)" "$(( ${report_sqlite#* } / 1024 ))" "$(( ${report_postgres#* } / 1024 ))"
line "compare: peak memory (MB)" "$(( ${compare_sqlite#* } / 1024 ))" "$(( ${compare_postgres#* } / 1024 ))"
