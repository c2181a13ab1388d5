#!/usr/bin/env bash
# The load bench: direct-to-backend vs through lingo, in one run, printed as a table.
# Builds lingo in release and runs benches/proxy.rs. Knobs: LINGO_BENCH_SECONDS (per row,
# default 3; 0 runs only the slow streams), LINGO_BENCH_STREAMS (concurrent slow streams,
# default 10000), LINGO_BENCH_LIMITS (1 or only: limits off, in the process and in Redis);
# the others (LINGO_BENCH_ROUNDS, _SLOW, _WRAP, _BIN) are in the module doc of
# benches/proxy.rs. A first run compiles lingo twice: the bench's build, and the release
# build it measures.
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n "$(ulimit -Hn)"
exec cargo bench --bench proxy "$@"
