#!/usr/bin/env bash
# Claiming at scale: PROCESSES agent processes claim a distributed run's TRIALS small trials
# from one throw-away PostgreSQL cluster (each claim one `FOR UPDATE SKIP LOCKED` statement,
# each trial's row and its claim done in one transaction, as an agent's sink writes them).
# Checks that no trial ran twice and none was lost, and prints claims per second.
#
#   bench/claims.sh [PROCESSES] [TRIALS]      (default 64 processes, 100000 trials)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
processes=${1:-64}
trials=${2:-100000}
scripts/openssl >/dev/null
cargo build --release -q -p tlslab-store --example claims
claims=${CARGO_TARGET_DIR:-target}/release/examples/claims

work=$(mktemp -d)
start_postgres "$work"
trap 'stop_postgres; rm -rf "$work"' EXIT
# Every agent holds a connection for its claims and one for its sink.
psql_as_postgres -c "ALTER SYSTEM SET max_connections = $((processes * 2 + 20))" >/dev/null
"${pg_as[@]}" "$pg_bin/pg_ctl" -D "$pg_data" -w restart -l "$work/postgres.log" >/dev/null
url=$pg_url
run=$("$claims" publish "$url" "$trials")
started=$(date +%s.%N)
for process in $(seq "$processes"); do
    "$claims" agent "$url" "$run" > "$work/agent$process.out" &
done
wait
ended=$(date +%s.%N)
claimed=$(cat "$work"/agent*.out | awk '{ s += $1 } END { print s }')
read -r rows distinct twice open < <(psql_as_postgres -At -F ' ' -d "$url" -c \
    "SELECT (SELECT count(*) FROM trials WHERE run_id = $run), (SELECT count(DISTINCT id) FROM trials WHERE run_id = $run), \
            (SELECT count(*) FROM claims WHERE run_id = $run AND claims > 1), (SELECT count(*) FROM claims WHERE run_id = $run AND done = 0)")
echo "$processes processes, $trials trials: claimed $claimed, trial rows $rows ($distinct distinct), claimed twice $twice, left open $open"
awk -v n="$trials" -v a="$started" -v b="$ended" 'BEGIN { printf "%.0f claims per second (each with its trial row written)\n", n / (b - a) }'
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$claimed" = "$trials" ] && [ "$rows" = "$trials" ] && [ "$twice" = 0 ] && [ "$open" = 0 ]
