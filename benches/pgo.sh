#!/usr/bin/env bash
# Builds lingo with profile-guided optimization (PGO): the fastest lingo this repository
# makes, at the cost of two release builds and a minute of training.
#
#   benches/pgo.sh              writes target/pgo/lingo (CARGO_TARGET_DIR/pgo/lingo)
#
# 1. A release build instrumented to count what runs (-Cprofile-generate).
# 2. Training: that build serves, in front of its own `lingo mock` backends, every kind of
#    call (native pass-through; chat completions, completions, embeddings and models
#    translated; native clients over a chat-completions upstream; web data passed through
#    and v1 over v2; HTTP/2 clients and an HTTP/2 upstream; TLS; errors), most of the
#    weight on the five load shapes of benches/ab.sh, then exits on SIGTERM, writing its
#    counts.
# 3. A release build that uses the counts (-Cprofile-use): the compiler inlines and lays out
#    for the paths that ran, and keeps what never ran out of their way.
#
# A whole native pass-through ran 21% fewer instructions than the plain release build and
# missed callgrind's simulated instruction cache a third as often, and lingo's CPU a request
# fell 19-41% over the five load shapes of benches/ab.sh (docs/benchmarks.md).
# Code the training never ran is taken as cold (kept apart, partly optimized for size), so it
# may be slower than in the plain build: add to the training what a deployment leans on.
#
# The counts fit only the source and compiler they came from: the script makes them afresh
# each time, nothing is kept in the repository. It needs llvm-profdata of the LLVM that
# rustc is built on (`rustup component add llvm-tools`), wrk, curl with HTTP/2 and python3.
# Extra RUSTFLAGS in the environment (a target CPU, say) go into both builds; rustflags set
# in a cargo configuration file do not (the environment's replace them).
set -euo pipefail
self=$(realpath "$0")
[[ $# -eq 0 ]] || { sed -n '2,27p' "$self"; exit 2; }
fail() { echo "pgo.sh: $*" >&2; exit 2; }
for tool in wrk curl python3; do
    command -v "$tool" > /dev/null || fail "needs $tool"
done
curl -V | grep -qw HTTP2 || fail "needs a curl with HTTP/2"
[[ -z ${CARGO_ENCODED_RUSTFLAGS:-} ]] || fail "set RUSTFLAGS, not CARGO_ENCODED_RUSTFLAGS"
# CARGO_TARGET_DIR as cargo reads it (from where the script is called), else ./target.
target_dir=${CARGO_TARGET_DIR:+$(realpath -m "$CARGO_TARGET_DIR")}
cd "$(dirname "$self")/.."
out=${target_dir:-$PWD/target}/pgo
[[ $out != *[[:space:]]* ]] || fail "the target directory's path has a space: $out"

# llvm-profdata of rustc's own LLVM (another major version cannot read its counts).
host=$(rustc -vV | sed -n 's/^host: //p')
llvm=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
profdata=
for candidate in "$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata" \
    "llvm-profdata-$llvm" llvm-profdata; do
    if "$candidate" merge --version 2>&1 | grep -q "LLVM version $llvm\."; then
        profdata=$candidate
        break
    fi
done
[[ -n $profdata ]] || fail "needs llvm-profdata of LLVM $llvm: rustup component add llvm-tools"

counts=$out/counts
rm -rf "$counts"
mkdir -p "$counts"
# Not with --target (which would keep the flags from build scripts and proc macros): the
# profile's counts name the plain build's functions.
build() {
    RUSTFLAGS="${RUSTFLAGS:-} $2" cargo build --release --locked --bin lingo --target-dir "$out/$1"
}

echo "== 1/3: the instrumented build" >&2
build generate "-Cprofile-generate=$counts"
trained=$out/generate/release/lingo
rm -f "$counts"/*  # what the build scripts counted

echo "== 2/3: training" >&2
# shellcheck source=benches/common.sh
source benches/common.sh
export LLVM_PROFILE_FILE=$counts/lingo-%p-%m.profraw
native=$(port)
chat=$(port)
v2=$(port)
plain=$(port)
over=$(port)
tls=$(port)
"$trained" mock --listen "127.0.0.1:$native" --tokens 16 > /dev/null 2>&1 &
pids+=($!)
"$trained" mock --listen "127.0.0.1:$chat" --tokens 16 --speaks chat-completions \
    > /dev/null 2>&1 &
pids+=($!)
"$trained" mock --listen "127.0.0.1:$v2" --speaks web-data-v2 > /dev/null 2>&1 &
pids+=($!)
cat > "$dir/proxy.yaml" << EOF
listen:
  - addr: 127.0.0.1:$plain
  - addr: 127.0.0.1:$tls
    tls:
      cert: "$PWD/tests/fixtures/tls/localhost.pem"
      key: "$PWD/tests/fixtures/tls/localhost.key"
upstreams:
  models: { url: "http://127.0.0.1:$native", speaks: native }
  models-h2: { url: "http://127.0.0.1:$native", speaks: native, http2: true }
  webdata: { url: "http://127.0.0.1:$native", speaks: web-data }
limits: { max_connections: 20000, max_in_flight: 20000 }
models:
  gpt-4o-mini: { upstream: models, model: llama3.2 }
  over-h2: { upstream: models-h2, model: llama3.2 }
routes:
  - { path: /v1/chat/completions, speaks: chat-completions, to: models }
  - { path: /v1/completions, speaks: chat-completions, to: models }
  - { path: /v1/embeddings, speaks: chat-completions, to: models }
  - { prefix: /v1/models, speaks: chat-completions, to: models }
  - { prefix: /api, to: models }
  - { prefix: /v1, to: webdata }
  - { prefix: /v2, to: webdata }
EOF
# The other directions: native clients over a chat-completions upstream, web-data v1
# clients over a v2-only upstream.
cat > "$dir/over.yaml" << EOF
listen:
  - addr: 127.0.0.1:$over
upstreams:
  chat: { url: "http://127.0.0.1:$chat", speaks: chat-completions }
  firecrawl: { url: "http://127.0.0.1:$v2", speaks: web-data-v2 }
models:
  llama3.2: { upstream: chat, model: gpt-4o-mini }
routes:
  - { prefix: /api, speaks: native, to: chat }
  - { prefix: /v1, to: firecrawl }
  - { prefix: /v2, to: firecrawl }
EOF
for table in proxy over; do
    RUST_LOG=warn "$trained" --config "$dir/$table.yaml" > /dev/null 2>&1 &
    pids+=($!)
done
for up in "$native:api/tags" "$chat:v1/models" "$v2:v2/team/token-usage" "$plain:healthz" \
    "$over:healthz"; do
    wait_up "${up%%:*}" "${up#*:}"
done

# wrk at 32 connections for $1 seconds: POST $3 (JSON) to path $2, on port $4 (default
# lingo's); every response must be a success, or the training trains the wrong path.
load() {
    post_lua "$dir/load.lua" "$3"
    wrk -t1 -c32 -d"$1" -s "$dir/load.lua" "http://127.0.0.1:${4:-$plain}$2" \
        | awk -v what="$2 ${3:0:40}" '/Requests\/sec/{rps = $2} /Non-2xx|Socket errors/{bad = 1}
            END{printf "    %-60s %9s req/s\n", what, rps; exit bad || !rps}' >&2 \
        || fail "$2 $3: responses that are not a success (or none)"
}
chat_asks='"messages":[{"role":"user","content":"hello there"}]'
# The load shapes of benches/ab.sh and the load bench: most of the weight.
for stream in false true; do
    load 4 /api/chat "{\"model\":\"llama3.2\",\"stream\":$stream,$chat_asks}"
    load 4 /v1/chat/completions "{\"model\":\"gpt-4o-mini\",\"stream\":$stream,$chat_asks}"
    load 2 /v1/completions "{\"model\":\"gpt-4o-mini\",\"stream\":$stream,\"prompt\":\"hi\"}"
    load 1 /api/generate "{\"model\":\"llama3.2\",\"stream\":$stream,\"prompt\":\"hi\"}"
    load 1 /v1/chat/completions "{\"model\":\"over-h2\",\"stream\":$stream,$chat_asks}"
    load 1 /api/chat "{\"model\":\"llama3.2\",\"stream\":$stream,$chat_asks}" "$over"
    load 1 /api/generate "{\"model\":\"llama3.2\",\"stream\":$stream,\"prompt\":\"hi\"}" "$over"
done
load 1 /api/show '{"model":"llama3.2"}'
load 1 /v1/embeddings '{"model":"gpt-4o-mini","input":["hello","there"]}'
load 1 /api/embed '{"model":"llama3.2","input":["hello","there"]}'
load 1 /api/embed '{"model":"llama3.2","input":["hello","there"]}' "$over"
load 1 /v1/scrape '{"url":"https://example.com"}'
load 1 /v2/scrape '{"url":"https://example.com"}'
load 1 /v1/scrape '{"url":"https://example.com","formats":["markdown","links"]}' "$over"
load 1 /v1/crawl '{"url":"https://example.com","limit":3}' "$over"
# Calls lighter on the load, 40 each: reads, HTTP/2, TLS, errors. `calls URL CURL_OPTION...`
# (a curl each: curl 7.88 fails the second request on a reused HTTP/2 connection).
calls() {
    local url=$1
    shift
    for _ in $(seq 40); do
        curl -sS -o /dev/null --resolve "localhost:$tls:127.0.0.1" "$@" "$url"
    done
}
for url in "http://127.0.0.1:$plain/v1/models" "http://127.0.0.1:$plain/api/tags" \
    "http://127.0.0.1:$plain/v1/team/token-usage" \
    "http://127.0.0.1:$over/v1/team/token-usage" "http://127.0.0.1:$over/api/tags" \
    "http://127.0.0.1:$plain/nowhere"; do
    calls "$url" --http1.1
    calls "$url" --http2-prior-knowledge
done
for body in "{\"model\":\"gpt-4o-mini\",\"stream\":true,$chat_asks}" '{"model":1}' 'not json'; do
    json=(-H 'content-type: application/json' -d "$body")
    calls "http://127.0.0.1:$plain/v1/chat/completions" --http2-prior-knowledge "${json[@]}"
    calls "https://localhost:$tls/v1/chat/completions" -k --http2 "${json[@]}"
    calls "https://localhost:$tls/v1/chat/completions" -k --http1.1 "${json[@]}"
done
# SIGTERM: each process drains, exits with success and writes its counts.
for pid in "${pids[@]}"; do kill -TERM "$pid"; done
for pid in "${pids[@]}"; do wait "$pid" || fail "process $pid did not exit cleanly"; done
written=$(find "$counts" -name '*.profraw' | wc -l)
[[ $written -eq ${#pids[@]} ]] || fail "$written of ${#pids[@]} processes wrote their counts"
pids=()
"$profdata" merge -o "$out/lingo.profdata" "$counts"/*.profraw
echo "   counts: $written processes, $(du -h "$out/lingo.profdata" | cut -f1)" >&2

echo "== 3/3: the build that uses them" >&2
build use "-Cprofile-use=$out/lingo.profdata"
# Copied beside, then renamed: a target/pgo/lingo still running is not written over.
cp "$out/use/release/lingo" "$out/lingo.new"
mv "$out/lingo.new" "$out/lingo"
echo "$out/lingo"
