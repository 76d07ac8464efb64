#!/usr/bin/env bash
# Samples per second the store's writer takes, into PostgreSQL and into SQLite, with the same
# samples (handshakes as a TLS 1.3 run on loopback stores them: every event timed, the
# negotiated version, bytes, the client's address), through the writer thread a run uses.
#
#   bench/store-ingest.sh [SAMPLES] [ROUNDS]      (default 1000000 samples, 3 rounds)
#
# PostgreSQL is a throw-away cluster this script starts (Debian's postgresql, initdb on a
# free port in a temporary directory, run as the postgres user when this runs as root), at
# its default settings, once with synchronous_commit on (the default: each commit waits for
# its WAL flush) and once off (as a user who accepts losing the last moments on a crash
# sets it). Each figure is the median of ROUNDS; the ratio is PostgreSQL's over SQLite's.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
samples=${1:-1000000}
rounds=${2:-3}
scripts/openssl >/dev/null
cargo build --release -q -p tlslab-store --example ingest
ingest=${CARGO_TARGET_DIR:-target}/release/examples/ingest

work=$(mktemp -d)
start_postgres "$work"
trap 'stop_postgres; rm -rf "$work"' EXIT
url=$pg_url

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# The PostgreSQL server's CPU so far, in clock ticks: the postmaster's own and that of its
# children it has reaped (each connection's backend, once it ends). Long-lived helpers (the
# WAL writer, the checkpointer) are not in it: the figure is a lower bound.
server_ticks() {
    awk '{ print $14 + $15 + $16 + $17 }' "/proc/$(head -1 "$pg_data/postmaster.pid")/stat"
}
ticks=$(getconf CLK_TCK)
# measure STORE-MAKER: per round, "samples/s ingest-CPU-µs-per-sample server-CPU-µs-per-sample"
# (the ingest process's user + system CPU: the samples made and the writer; the same
# samples are made for either store, so the difference is the writers').
measure() {
    for round in $(seq "$rounds"); do
        local before after
        before=$(server_ticks)
        /usr/bin/time -f '%U %S' -o "$work/ingest.time" "$ingest" "$($1 "$round")" "$samples" > "$work/ingest.out"
        # The connection's backend ends (and is reaped) just after the ingest does.
        sleep 1
        after=$(server_ticks)
        awk -v n="$samples" -v t="$ticks" -v server=$((after - before)) \
            'NR == FNR { rate = $3; next } { printf "%s %.2f %.2f\n", rate, ($1 + $2) * 1e6 / n, server / t * 1e6 / n }' \
            "$work/ingest.out" "$work/ingest.time"
    done > "$work/rounds"
    # The median of each column on its own.
    for column in 1 2 3; do awk -v c=$column '{ print $c }' "$work/rounds" | median; done | paste -sd' '
}
sqlite_store() { rm -f "$work/ingest-$1.db"; echo "$work/ingest-$1.db"; }
postgres_store() { echo "$url"; }

sqlite=$(measure sqlite_store)
psql_as_postgres -c "ALTER SYSTEM SET synchronous_commit = on" -c "SELECT pg_reload_conf()" >/dev/null
postgres_on=$(measure postgres_store)
psql_as_postgres -c "ALTER SYSTEM SET synchronous_commit = off" -c "SELECT pg_reload_conf()" >/dev/null
postgres_off=$(measure postgres_store)

row() { printf '%-44s %10s %14s %14s\n' "$1" $2; }
row "store ($samples samples, median of $rounds)" "samples/s ingest-µs/sample server-µs/sample"
row "SQLite file" "$sqlite"
row "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}'), synchronous_commit on" "$postgres_on"
row "PostgreSQL, synchronous_commit off" "$postgres_off"
awk -v s="${sqlite%% *}" -v on="${postgres_on%% *}" -v off="${postgres_off%% *}" \
    'BEGIN { printf "PostgreSQL against SQLite: %.2fx (synchronous_commit on), %.2fx (off); load average %s\n", on / s, off / s, "'"$(cut -d' ' -f1-3 /proc/loadavg)"'" }'
