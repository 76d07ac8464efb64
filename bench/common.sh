# Shared by the bench scripts (sourced, not run).

# write_nginx_conf FILE WORK PORT CHAIN KEY [DIRECTIVES [TLS]]: a one-worker nginx in the
# foreground, serving TLS 1.3 with X25519 and no session tickets on 127.0.0.1:PORT, with its
# state under WORK; DIRECTIVES go into the server block; TLS, when given, replaces the
# protocol, curve and ticket lines (a whole Mozilla profile, say).
write_nginx_conf() {
    local file=$1 work=$2 port=$3 chain=$4 key=$5 directives=${6:-}
    local tls=${7:-"ssl_protocols TLSv1.3; ssl_ecdh_curve X25519; ssl_session_tickets off;"}
    cat > "$file" <<CONF
daemon off; master_process off; worker_processes 1; pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/body; proxy_temp_path $work/proxy; fastcgi_temp_path $work/fastcgi;
  uwsgi_temp_path $work/uwsgi; scgi_temp_path $work/scgi;
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $chain; ssl_certificate_key $key;
    $tls
    $directives
    location / { return 200 "ok\n"; }
  }
}
CONF
}

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits until the server accepts connections on the port; fails if it exits or never listens.
wait_port() {
    local pid=$1 port=$2 log=$3
    for _ in $(seq 200); do
        (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    echo "the server did not listen on 127.0.0.1:$port; its output:" >&2
    cat "$log" >&2
    return 1
}

# start_postgres WORK: a throw-away PostgreSQL cluster (Debian's postgresql, at its default
# settings) on a free port, its data and socket under WORK, run as the postgres user when
# this runs as root; sets pg_url (trust authentication on 127.0.0.1) and pg_bin. Stop it
# with stop_postgres.
start_postgres() {
    local work=$1
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    [ -x "$pg_bin/initdb" ] || { echo "PostgreSQL is required: apt-get install postgresql" >&2; exit 3; }
    pg_as=()
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$work"
        pg_as=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    fi
    pg_data=$work/postgres
    local port
    port=$(free_port)
    "${pg_as[@]}" "$pg_bin/initdb" -D "$pg_data" -U postgres --auth=trust --no-sync >/dev/null
    "${pg_as[@]}" "$pg_bin/pg_ctl" -D "$pg_data" -l "$work/postgres.log" -w \
        -o "-p $port -k $work -c listen_addresses=127.0.0.1" start >/dev/null
    pg_url="postgres://postgres@127.0.0.1:$port/postgres"
    pg_socket=$work
    pg_port=$port
}

# psql_as_postgres ARGS...: psql on the cluster start_postgres made.
psql_as_postgres() { "${pg_as[@]}" "$pg_bin/psql" -q -h "$pg_socket" -p "$pg_port" -U postgres "$@"; }

stop_postgres() { [ -n "${pg_data:-}" ] && "${pg_as[@]}" "$pg_bin/pg_ctl" -D "$pg_data" -m immediate stop >/dev/null 2>&1 || true; }
