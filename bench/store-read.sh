#!/usr/bin/env bash
# Reading a large run back, PostgreSQL against SQLite: `tlslab report --format md` and
# `tlslab compare --json` of the same run in a SQLite file and in a throw-away PostgreSQL
# cluster, wall time, the reader's CPU and peak memory.
#
#   bench/store-read.sh [READ] [ROUNDS]      (default 1000000 requests, 5 rounds)
#
# The run is a `tlslab load` of READ requests against a one-worker nginx (two Configs: two
# TLS 1.3 suites, half the requests each, 64 kept connections) into a SQLite file, then
# `tlslab store copy` of that file into the cluster (so both stores hold the same rows),
# then `VACUUM ANALYZE` (the state autovacuum leaves a database in shortly after a run).
# The stores are read alternately, SQLite then PostgreSQL, ROUNDS times each; each figure
# is the median. With BEFORE=path/to/another/tlslab, that binary reads the same stores too,
# alternating with this one (a change measured before and after under the same load).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
read=${1:-1000000}
rounds=${2:-5}
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "nginx is required: apt-get install nginx-light" >&2; exit 3; }
scripts/openssl >/dev/null
cargo build --release -q -p tlslab
tlslab=${TLSLAB:-${CARGO_TARGET_DIR:-target}/release/tlslab}
binaries=("$tlslab")
[ -n "${BEFORE:-}" ] && binaries=("$BEFORE" "$tlslab")

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

half=$((read / 2))
"$tlslab" load "https://127.0.0.1:$port/" --sni localhost --ca "$root" --suite aes128gcm,chacha20 \
    -n "$half" -c 64 --block "$half" --warmup 64 --quiet --store "$work/read.db" > /dev/null
kill "$nginx_pid"
"$tlslab" store copy "$work/read.db" "$pg_url" > /dev/null
psql_as_postgres -c "VACUUM ANALYZE" >/dev/null

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# read_once BINARY STORE COMMAND...: "wall-seconds cpu-seconds peak-MB" of one read.
read_once() {
    local binary=$1 store=$2; shift 2
    /usr/bin/time -f '%e %U %S %M' "$binary" "$@" "$store" > "$work/out" 2> "$work/time" || {
        echo "reading $store failed:" >&2; cat "$work/time" >&2; exit 1; }
    tail -1 "$work/time" | awk '{ printf "%s %.2f %d\n", $1, $2 + $3, $4 / 1024 }'
}
for round in $(seq "$rounds"); do
    for index in "${!binaries[@]}"; do
        for kind in sqlite postgres; do
            store=$work/read.db
            [ $kind = postgres ] && store=$pg_url
            echo "$index report $kind $(read_once "${binaries[$index]}" "$store" report --format md -o "$work/report-$kind.md" --force)"
            echo "$index compare $kind $(read_once "${binaries[$index]}" "$store" compare --json)"
        done
    done
done > "$work/rounds"

printf '%s\n' "$read requests, median of $rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %-8s %10s %10s %8s %12s %12s %10s %10s\n' binary command "SQLite s" "Postgres s" ratio \
    "SQLite CPU" "Postgres CPU" "SQLite MB" "Postgres MB"
for index in "${!binaries[@]}"; do
    name=this
    [ ${#binaries[@]} = 2 ] && [ "$index" = 0 ] && name=before
    for command in report compare; do
        figure() { awk -v i="$index" -v c="$command" -v k="$1" -v f="$2" '$1 == i && $2 == c && $3 == k { print $f }' "$work/rounds" | median; }
        s=$(figure sqlite 4) p=$(figure postgres 4)
        printf '%-10s %-8s %10s %10s %8s %12s %12s %10s %10s\n' "$name" "$command" "$s" "$p" \
            "$(awk -v a="$s" -v b="$p" 'BEGIN { printf "%.2fx", b / a }')" \
            "$(figure sqlite 5)" "$(figure postgres 5)" "$(figure sqlite 6)" "$(figure postgres 6)"
    done
done
