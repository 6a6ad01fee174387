# Sourced by .ci/contract and .ci/clients: a fresh service (SQLite, a new data directory) with one
# organisation, campaign and key, started from the binary in `$binary`.

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
field() { python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }

server=""
stop_server() {
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
        server=""
    fi
}

# start_service DIR [options of `key issue`...]: the service on a free port with its data in DIR,
# its log in DIR/serve.log; sets `port`, `sftp_port`, `admin_port`, `org`, `campaign`, `api_key`
# and `api_secret`.
start_service() {
    local dir=$1
    shift
    mkdir -p "$dir"
    unset DATABASE_URL
    export REWARDS_DATA_DIR="$dir/data"
    port=$(free_port)
    sftp_port=$(free_port)
    admin_port=$(free_port)
    export REWARDS_HTTP_ADDR="127.0.0.1:$port" REWARDS_SFTP_ADDR="127.0.0.1:$sftp_port"
    export REWARDS_ADMIN_ADDR="127.0.0.1:$admin_port"
    local key
    org=$("$binary" org create --name "Contract")
    campaign=$("$binary" campaign create --org "$org" --name "Points" --currency POINTS)
    key=$("$binary" --json key issue --org "$org" --campaign "$campaign" "$@")
    api_key=$(field apiKey <<<"$key")
    api_secret=$(field apiSecret <<<"$key")
    "$binary" serve >"$dir/serve.log" 2>&1 &
    server=$!
    for _ in $(seq 1 60); do
        curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    echo "the service did not become ready" >&2
    tail -n 50 "$dir/serve.log" >&2
    return 1
}
