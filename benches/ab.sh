#!/usr/bin/env bash
# A/B of lingo builds under the same load, alternating, to decide whether a change pays.
#
#   benches/ab.sh [--instructions] BINARY_A BINARY_B [...]
#
# For each build, in turn (in rounds, two by default): its own `lingo mock` as the backend,
# lingo in front of it (one route table, in a temporary directory), and five cases at 32
# keep-alive connections for 3 s each (wrk, one thread): native pass-through and
# chat-completions translated, each whole and streamed (16 tokens), and a streamed
# `/v1/completions`. Prints requests/s and lingo's own CPU per request (user + system from
# /proc, divided by the requests served; user time, lingo's own code, apart): on a shared
# machine the steadier figure.
#
# --instructions: instead, lingo runs under callgrind (one worker) and each case prints the
# instructions per request, counted from after a warm-up: the same for the same binary on
# any load, so a change of 1% shows. LINGO_AB_KEEP=DIR keeps each case's callgrind file
# there (DIR/ROUND-BINARY-CASE.cg), to read with `callgrind_annotate --threshold=100`; its
# functions are written by name (each case's file is a dump after the first, which would
# otherwise name them only by number). LINGO_AB_CACHE=1 adds callgrind's cache simulation
# (of the first-level caches valgrind finds on the machine): each case also prints the
# instruction and data cache misses per request. lingo touches more code a request than
# nginx (a whole pass-through missed the simulated instruction cache ~750 times a
# request where nginx missed 280); smaller code did not pay (built at opt-level 2 or "s" it
# ran 2% and 22% more instructions). LINGO_AB_MANGLED=1 keeps the functions' names as the
# binary's symbols.
#
# LINGO_AB_ROUNDS sets the number of rounds (default 2), LINGO_AB_CASES a regular
# expression the cases' names must match (whole_native, stream_native, whole_openai,
# stream_openai, stream_completions; default all). LINGO_AB_BACKENDS=N (default 1) gives the
# upstream N backends, each its own `lingo mock`: with --instructions, what picking among
# them costs lingo, apart from what the extra processes cost the machine.
#
# Needs wrk (apt-get install wrk) and, for --instructions, valgrind. Copy the binaries out
# of target/ first (cp target/release/lingo /tmp/lingo-a) so that a rebuild does not
# replace them, right after `cargo build --release`: `cargo test --release` and
# `cargo bench` relink target/release/lingo with the tests' tokio `test-util` (~1% more
# instructions). Compare builds made the same way: two of the same source, one made under
# other environment variables, differed by 1%.
set -euo pipefail

instructions=false
if [[ "${1:-}" == "--instructions" ]]; then
    instructions=true
    shift
fi
[[ $# -ge 1 ]] || { sed -n '2,37p' "$0"; exit 2; }
command -v wrk > /dev/null || { echo "ab.sh needs wrk (apt-get install wrk)" >&2; exit 2; }

# shellcheck source=benches/common.sh
source "$(dirname "$0")/common.sh"
lingo_port=$(port)
mock_ports=()
for _ in $(seq "${LINGO_AB_BACKENDS:-1}"); do mock_ports+=("$(port)"); done
backends=$(printf '{ url: "http://127.0.0.1:%s" }, ' "${mock_ports[@]}")
mkdir "$dir/table"
cat > "$dir/table/proxy.yaml" << EOF
listen:
  - addr: 127.0.0.1:$lingo_port
upstreams:
  models: { backends: [${backends%, }], speaks: native }
limits: { max_connections: 20000, max_in_flight: 20000 }
models:
  gpt-4o-mini: { upstream: models, model: llama3.2 }
routes:
  - { path: /v1/chat/completions, speaks: chat-completions, to: models }
  - { path: /v1/completions, speaks: chat-completions, to: models }
  - { prefix: /api, to: models }
EOF
cases=(whole_native:llama3.2:false:/api/chat stream_native:llama3.2:true:/api/chat
    whole_openai:gpt-4o-mini:false:/v1/chat/completions
    stream_openai:gpt-4o-mini:true:/v1/chat/completions
    stream_completions:gpt-4o-mini:true:/v1/completions)
for case in "${cases[@]}"; do
    IFS=: read -r name model stream path <<< "$case"
    asks='"messages":[{"role":"user","content":"hello there"}]'
    [[ $path == /v1/completions ]] && asks='"prompt":"hello there"'
    request_lua "$dir/$name.lua" "$model" "$stream" "$asks"
done

# User and system time, in clock ticks.
cpu_ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }

# One build: start its mock and lingo, run the four cases, stop both.
run() {
    local bin=$1 round=$2 lingo
    local mocks=()
    for mock_port in "${mock_ports[@]}"; do
        "$bin" mock --listen "127.0.0.1:$mock_port" --tokens 16 > /dev/null 2>&1 &
        mocks+=($!)
    done
    pids+=("${mocks[@]}")
    if $instructions; then
        RUST_LOG=warn LINGO_WORKERS=1 valgrind --tool=callgrind --compress-strings=no \
            --cache-sim="$([[ -n "${LINGO_AB_CACHE:-}" ]] && echo yes || echo no)" \
            --demangle="$([[ -n "${LINGO_AB_MANGLED:-}" ]] && echo no || echo yes)" \
            --callgrind-out-file="$dir/cg.%p" "$bin" --config "$dir/table/proxy.yaml" \
            > "$dir/valgrind.log" 2>&1 &
    else
        RUST_LOG=warn "$bin" --config "$dir/table/proxy.yaml" > /dev/null 2>&1 &
    fi
    lingo=$!
    pids+=("$lingo")
    for mock_port in "${mock_ports[@]}"; do wait_up "$mock_port" api/tags; done
    wait_up "$lingo_port" healthz
    for case in "${cases[@]}"; do
        IFS=: read -r name _ _ path <<< "$case"
        [[ $name =~ ${LINGO_AB_CASES:-.} ]] || continue
        local url="http://127.0.0.1:$lingo_port$path"
        if $instructions; then
            wrk -t1 -c4 -d2 -s "$dir/$name.lua" "$url" > /dev/null
            callgrind_control -z "$lingo" > /dev/null 2>&1
            n=$(wrk -t1 -c4 -d4 -s "$dir/$name.lua" "$url" | awk '/requests in/{print $1}')
            callgrind_control -d "$lingo" > /dev/null 2>&1
            sleep 1
            dump=$(ls -t "$dir"/cg.* | head -1)
            ir=$(callgrind_annotate "$dump" 2> /dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
            misses=$(awk -v n="$n" '/^events:/{for (i = 2; i <= NF; i++) e[i] = $i}
                /^summary:/{for (i = 2; i <= NF; i++) v[e[i]] = $i}
                END{if ("I1mr" in v) printf "  I1 misses %d, D1 misses %d",
                    v["I1mr"] / n, (v["D1mr"] + v["D1mw"]) / n}' "$dump")
            if [[ -n "${LINGO_AB_KEEP:-}" ]]; then
                mkdir -p "$LINGO_AB_KEEP"
                mv "$dump" "$LINGO_AB_KEEP/$round-$(basename "$bin")-$name.cg"
            else
                rm -f "$dump"
            fi
            printf '%s %-24s %-18s %8d instructions/request%s\n' "$round" "$(basename "$bin")" \
                "$name" $((ir / n)) "$misses"
        else
            read -r u0 s0 <<< "$(cpu_ticks "$lingo")"
            out=$(wrk -t1 -c32 -d3 -s "$dir/$name.lua" "$url")
            read -r u1 s1 <<< "$(cpu_ticks "$lingo")"
            n=$(awk '/requests in/{print $1}' <<< "$out")
            rps=$(awk '/Requests\/sec/{print $2}' <<< "$out")
            bad=$(grep -c "Non-2xx" <<< "$out" || true)
            tick_us=$((1000000 / $(getconf CLK_TCK)))
            cpu=$(awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v t="$tick_us" -v n="$n" \
                'BEGIN{printf "%5.1f us CPU/request (user %4.1f)", (u + s) * t / n, u * t / n}')
            printf '%s %-24s %-18s %10s req/s %s%s\n' "$round" "$(basename "$bin")" \
                "$name" "$rps" "$cpu" "$([[ $bad == 0 ]] || echo '  NON-2XX RESPONSES')"
        fi
    done
    kill "$lingo" "${mocks[@]}" 2> /dev/null || true
    wait "$lingo" "${mocks[@]}" 2> /dev/null || true
}

for round in $(seq "${LINGO_AB_ROUNDS:-2}"); do
    for bin in "$@"; do
        run "$(realpath "$bin")" "$round"
    done
done
