#!/usr/bin/env bash
# The webhook relay's bench: events acknowledged a second (and the acknowledgement's p50 and
# p99) with the embedded store (or Redis: LINGO_BENCH_STORE=redis, needs redis-server), and
# events delivered a second into a receiver that responds with 204, nothing lost. Builds lingo in
# release and runs benches/webhooks.rs. Knobs: LINGO_BENCH_EVENTS (default 20000),
# LINGO_BENCH_CONCURRENCY (the upstream's POSTs at once, default 32), LINGO_BENCH_BIN (the
# lingo binary to measure), LINGO_BENCH_STORE=redis.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --bench webhooks "$@"
