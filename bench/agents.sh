#!/usr/bin/env bash
# What distributing a run costs: the same Plan run by one process and by 4 agents against
# one lab server, both into one throw-away PostgreSQL cluster. Prints the client CPU per
# handshake of each (the trials' own CPU time: user + system), their ratio, and the
# coordination's overhead per handshake (claims, heartbeats and the clock: each agent
# process's whole CPU time less its trials').
#
#   bench/agents.sh [HANDSHAKES] [BLOCK]     (default 4000 per Config, blocks of 200)
#
# Client and server share this machine's cores: compare CPU per handshake, not rates.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
handshakes=${1:-4000}
block=${2:-200}
scripts/openssl >/dev/null
cargo build --release -q -p tlslab
tlslab=${CARGO_TARGET_DIR:-target}/release/tlslab

work=$(mktemp -d)
start_postgres "$work"
port=$(free_port)
"$tlslab" serve --listen "127.0.0.1:$port" > "$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; stop_postgres; rm -rf "$work"' EXIT
wait_port "$server" "$port" "$work/serve.log"
url=$pg_url
plan=(--target "127.0.0.1:$port" --insecure --tls 1.2,1.3 -n "$handshakes" --block "$block" --warmup 0 --seed 7)

# The trials' client CPU per handshake, µs, of run $1.
trial_cpu() {
    psql_as_postgres -At -d "$url" -c "SELECT round(sum(client_user_ns + client_system_ns) / 1000.0 / sum(attempted), 1) FROM trials WHERE run_id = $1"
}

"$tlslab" run "${plan[@]}" --store "$url" --quiet > /dev/null
local_run=$(psql_as_postgres -At -d "$url" -c "SELECT max(id) FROM runs")
run=$("$tlslab" run "${plan[@]}" --store "$url" --agents 4 --detach 2>/dev/null)
for shard in 0 1 2 3; do
    /usr/bin/time -f '%U %S' -o "$work/agent$shard.time" \
        "$tlslab" agent --store "$url" --run "$run" --shard "$shard/4" > /dev/null &
done
wait %2 %3 %4 %5 2>/dev/null || wait
local_cpu=$(trial_cpu "$local_run")
agents_cpu=$(trial_cpu "$run")
# Each agent process's whole CPU against its trials': what claiming, beating and waiting cost.
process_us=$(cat "$work"/agent*.time | awk '{ s += $1 + $2 } END { printf "%.0f", s * 1e6 }')
trials_us=$(psql_as_postgres -At -d "$url" -c "SELECT round(sum(client_user_ns + client_system_ns) / 1000.0) FROM trials WHERE run_id = $run")
attempted=$(psql_as_postgres -At -d "$url" -c "SELECT attempted FROM runs WHERE id = $run")
printf 'client CPU per handshake: one process %s µs, 4 agents %s µs (ratio %s)\n' \
    "$local_cpu" "$agents_cpu" "$(awk -v a="$agents_cpu" -v l="$local_cpu" 'BEGIN { printf "%.3f", a / l }')"
printf 'agents: %s handshakes; process CPU %s µs, trials %s µs: coordination and start-up %s µs per handshake\n' \
    "$attempted" "$process_us" "$trials_us" \
    "$(awk -v p="$process_us" -v t="$trials_us" -v n="$attempted" 'BEGIN { printf "%.1f", (p - t) / n }')"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
