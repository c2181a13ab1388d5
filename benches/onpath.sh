#!/usr/bin/env bash
# What a proxy does on a request's way, one request at a time: lingo's builds beside nginx.
#
#   benches/onpath.sh [BINARY ...]        (default: target/release/lingo)
#
# At concurrency 1 a request's latency is the sum of every process's work on its way and of
# the kernel's wakeups between them. The wakeups, and on which core each process happens to
# run, move the median latency by ±10 µs between runs of the same build (`cargo bench --bench
# proxy`, wrk), far more than the proxies differ; this measures the proxy's own part alone.
# The proxy's system calls are traced (perf, syscall tracepoints, timestamps in ns) while wrk
# sends one request at a time for 2 s, and for each case it prints the medians, over every
# request, of:
#
# - request path: from the wake that brought the client's request (a blocking `epoll_wait`
#   returns; tokio's polls without a timeout do not count) to the write of the request to
#   the upstream;
# - response path: from the wake that brought the upstream's response to the write to the client;
# - after: from each of those writes to the next wait (work done while the others work: off
#   the latency's path).
#
# Both paths include the proxy's reads and the tracing's own cost (about a microsecond for
# each system call on the path: lingo makes two, nginx two or three), so compare the
# proxies, not the absolute figures. Cases:
# native pass-through (`/api/chat`, whole response) for lingo and nginx, and lingo translating
# (`/v1/chat/completions`). lingo runs one worker (`LINGO_WORKERS=1`), nginx one worker
# process; the backend is the first binary's `lingo mock`. LINGO_ONPATH_ROUNDS sets the
# rounds (default 3; each round runs every proxy once, in turn).
#
# Needs wrk, perf (Debian: linux-perf) allowed to trace system calls (root, or
# kernel.perf_event_paranoid=-1 and tracefs readable), python3, and nginx for its row
# (apt-get install -y nginx-light; skipped with a message otherwise). x86_64 only (system
# call numbers).
set -euo pipefail

for tool in wrk perf python3 curl ss pgrep; do
    command -v "$tool" > /dev/null || { echo "onpath.sh needs $tool (wrk: apt-get install wrk; perf: linux-perf)" >&2; exit 2; }
done
[[ $(uname -m) == x86_64 ]] || { echo "onpath.sh reads x86_64 system call numbers" >&2; exit 2; }
bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=(target/release/lingo)
for bin in "${bins[@]}"; do
    [[ -x $bin ]] || { echo "no executable $bin (cargo build --release first)" >&2; exit 2; }
done

# shellcheck source=benches/common.sh
source "$(dirname "$0")/common.sh"
perf record -q -e raw_syscalls:sys_enter -o "$dir/probe.data" -- true > /dev/null 2>&1 \
    || { echo "perf may not trace system calls here (run as root?)" >&2; exit 2; }

mock_port=$(port)
"${bins[0]}" mock --listen "127.0.0.1:$mock_port" > /dev/null 2>&1 &
pids+=($!)
wait_up "$mock_port" api/tags

# Each proxy: "name pid port".
proxies=()
for i in "${!bins[@]}"; do
    p=$(port)
    mkdir "$dir/$i"
    cat > "$dir/$i/proxy.yaml" << EOF
listen:
  - addr: 127.0.0.1:$p
upstreams:
  models: { url: "http://127.0.0.1:$mock_port", speaks: native }
models:
  gpt-4o-mini: { upstream: models, model: llama3.2 }
routes:
  - { path: /v1/chat/completions, speaks: chat-completions, to: models }
  - { prefix: /api, to: models }
EOF
    LINGO_WORKERS=1 RUST_LOG=warn "${bins[$i]}" --config "$dir/$i/proxy.yaml" > /dev/null 2>&1 &
    pids+=($!)
    wait_up "$p" healthz
    name=$(basename "${bins[$i]}")
    [[ " ${proxies[*]:-} " == *" $name "* ]] && name="$name#$((i + 1))"
    proxies+=("$name $! $p")
done
if command -v nginx > /dev/null; then
    p=$(port)
    mkdir "$dir/nginx"
    cat > "$dir/nginx/nginx.conf" << EOF
worker_processes 1; daemon off; pid $dir/nginx/nginx.pid; error_log $dir/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off; client_body_temp_path $dir/nginx/body; proxy_temp_path $dir/nginx/proxy;
  keepalive_requests 1000000;
  upstream backend { server 127.0.0.1:$mock_port; keepalive 16; keepalive_requests 1000000; }
  server { listen 127.0.0.1:$p; location / { proxy_pass http://backend;
    proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; } }
}
EOF
    nginx -p "$dir/nginx" -e "$dir/nginx/error.log" -c "$dir/nginx/nginx.conf" > /dev/null 2>&1 &
    pids+=($!)
    master=$!
    wait_up "$p" api/tags
    proxies+=("nginx $(pgrep -P "$master" | head -1) $p")
else
    echo "nginx not installed (apt-get install -y nginx-light): its row is skipped" >&2
fi

for name in whole_native whole_openai; do
    model=llama3.2
    [[ $name == whole_openai ]] && model=gpt-4o-mini
    request_lua "$dir/$name.lua" "$model" false '"messages":[{"role":"user","content":"hello there"}]'
done

# The medians of one trace: $1 the perf script output, $2 and $3 the proxy's fds of the
# client's and the upstream's connections.
medians() {
    python3 - "$1" "$2" "$3" << 'EOF'
import re, statistics, sys
WAIT, WRITES = {232, 281, 441}, {1, 20, 44, 46}
client, upstream = int(sys.argv[2]), int(sys.argv[3])
line_re = re.compile(r'\s(\d+)\s+\[\d+\]\s+(\d+\.\d+):\s+raw_syscalls:sys_(enter|exit): NR (\d+)(?: \(([0-9a-f, ]+)\))?')
paths = {"request": [], "response": [], "after request": [], "after response": []}
woke, blocking, writing, wrote = {}, {}, {}, {}
for line in open(sys.argv[1]):
    m = line_re.search(line)
    if not m:
        continue
    tid, at, kind, nr = int(m[1]), float(m[2]), m[3], int(m[4])
    args = [int(a, 16) for a in m[5].split(", ")] if m[5] else []
    if nr in WAIT and kind == "enter":
        # A wait that cannot block (timeout 0: tokio's look at the events between its tasks)
        # starts no path; any wait ends the work after a write (the proxy looks for more).
        blocking[tid] = nr == 441 or args[3] != 0
        if tid in wrote:
            path, since = wrote.pop(tid)
            paths["after " + path].append(at - since)
    elif nr in WAIT and blocking.pop(tid, False):
        woke[tid] = at
    elif nr in WRITES and kind == "enter" and tid in woke and args[0] in (client, upstream):
        path = "response" if args[0] == client else "request"
        paths[path].append(at - woke.pop(tid))
        writing[tid] = path
    elif nr in WRITES and kind == "exit" and tid in writing:
        wrote[tid] = (writing.pop(tid), at)
n = min(len(paths["request"]), len(paths["response"]))
if n < 100:
    sys.exit(f"only {n} requests traced: perf lost events, or the fds were wrong")
us = lambda xs: statistics.median(xs) * 1e6
print(f"request path {us(paths['request']):5.1f} us  response path {us(paths['response']):5.1f} us"
      f"  on the way {us(paths['request']) + us(paths['response']):5.1f} us"
      f"  after {us(paths['after request']) + us(paths['after response']):4.1f} us  ({n} requests)")
EOF
}

for round in $(seq "${LINGO_ONPATH_ROUNDS:-3}"); do
    for proxy in "${proxies[@]}"; do
        read -r who pid p <<< "$proxy"
        for name in whole_native whole_openai; do
            [[ $who == nginx && $name == whole_openai ]] && continue
            url="http://127.0.0.1:$p/api/chat"
            [[ $name == whole_openai ]] && url="http://127.0.0.1:$p/v1/chat/completions"
            wrk -t1 -c1 -d1 -s "$dir/$name.lua" "$url" > /dev/null
            perf record -q -m 16M -e raw_syscalls:sys_enter,raw_syscalls:sys_exit -p "$pid" \
                -o "$dir/trace.data" -- sleep 2.5 > /dev/null 2>&1 &
            tracer=$!
            pids+=("$tracer")
            sleep 0.2
            wrk -t1 -c1 -d2 -s "$dir/$name.lua" "$url" > /dev/null &
            load=$!
            pids+=("$load")
            sleep 0.5
            # The proxy's ends of wrk's connection (on its listening port) and of the
            # backend's.
            fd() {
                ss -tnpH state established "$1" | grep -o "pid=$pid,fd=[0-9]*" | head -1 \
                    | cut -d= -f3 || true
            }
            client=$(fd "( sport = :$p )")
            upstream=$(fd "( dport = :$mock_port )")
            [[ -n $client && -n $upstream ]] || { echo "no connections of $who found (ss)" >&2; exit 1; }
            wait "$load" "$tracer"
            perf script --ns -i "$dir/trace.data" 2> /dev/null > "$dir/trace.txt"
            figures=$(medians "$dir/trace.txt" "$client" "$upstream")
            printf '%s %-20s %-14s %s\n' "$round" "$who" "$name" "$figures"
        done
    done
done
