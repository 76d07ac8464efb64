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
