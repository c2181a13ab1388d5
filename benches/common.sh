# What the bench scripts share (sourced by ab.sh, onpath.sh and pgo.sh): a scratch
# directory removed at exit with the processes they started, a free port, a wait for a
# server, and wrk's request script.

# The scratch directory; every process whose pid is added to `pids` is stopped at exit.
dir=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT

# A free port on the loopback.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits (up to 20 s) until http://127.0.0.1:$1/$2 responds; the bench ends if it never does.
wait_up() {
    for _ in $(seq 100); do
        curl -sf -o /dev/null "http://127.0.0.1:$1/$2" && return 0
        sleep 0.2
    done
    echo "nothing responds on port $1" >&2
    exit 1
}

# wrk's script for a POST of $2 as JSON, written to $1.
post_lua() {
    cat > "$1" << LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$2'
LUA
}

# wrk's script for a POST of `{"model":$2,"stream":$3,$4}` as JSON, written to $1.
request_lua() { post_lua "$1" "{\"model\":\"$2\",\"stream\":$3,$4}"; }
