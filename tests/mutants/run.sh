#!/bin/sh
# Mutation testing of lingo's riskiest areas, by hand (not in CI: too slow).
#
#   tests/mutants/run.sh [AREA...]      AREA: path router headers errors translate webdata
#                                       h1 (default: all of them)
#
# `h1` is lingo's own HTTP/1.1 code in three parts, each also an area of its own: `h1-read`
# (the shared reader and chunked decoder, src/http/h1), `h1-server` (src/server/h1) and
# `h1-client` (src/upstream/h1). Their unit pass runs only the unit tests under `h1::`.
#
# Each area runs in two passes: every mutant against the library's unit tests (one test
# binary to rebuild: fast), then only the survivors again with the socket tests that cover
# the area (`--iterate` skips what the first pass caught). Results: target/mutants/AREA/
# mutants.out/{caught,missed,timeout,unviable}.txt. A survivor is killed by a new test or
# explained in tests/mutants/README.md. Needs `cargo install cargo-mutants --locked`.
#
# Each mutant is built with the `mutants` profile (Cargo.toml: the test profile without debug
# info), which links in a fifth of the time: 3-4 s a mutant instead of 18 s here.
#
# Tip: `--in-place` in a separate `git worktree` (with its own CARGO_TARGET_DIR) skips the
# copy of the tree cargo-mutants otherwise makes for every run: MUTANTS_FLAGS=--in-place.
set -eu
cd "$(dirname "$0")/../.."

area() {
    name=$1 files=$2 tests=$3 unit=${4:-}
    out=target/mutants/$name
    mkdir -p "$out" # cargo-mutants makes only the last level (target/ is absent with CARGO_TARGET_DIR)
    file_args=""
    for f in $files; do file_args="$file_args --file $f"; done
    test_args=""
    for t in $tests; do test_args="$test_args -C --test=$t"; done
    echo "== $name: unit tests"
    # cargo-mutants exits non-zero when mutants survive; the second pass retries them.
    cargo mutants --profile mutants ${MUTANTS_FLAGS:-} $file_args -C --lib --output "$out" -- $unit || true
    echo "== $name: survivors against the socket tests ($tests)"
    cargo mutants --profile mutants ${MUTANTS_FLAGS:-} --iterate $file_args -C --lib $test_args --output "$out" || true
    for kind in previously_caught caught missed timeout unviable; do
        printf '%s %s: %s\n' "$name" "$kind" "$(grep -c . "$out/mutants.out/$kind.txt" 2>/dev/null || echo 0)"
    done
}

run() {
    case $1 in
    path) area path src/http/path.rs "normalize smuggling errors" ;;
    router) area router src/table/router.rs "errors promises" ;;
    headers) area headers src/upstream/headers.rs "passthrough promises websocket" ;;
    errors) area errors "src/base/dialect.rs src/proxy/respond.rs src/error.rs" "errors promises limits renderer" ;;
    webdata) area webdata "src/translate/webdata/*.rs" \
        "webdata_v1_over_v2 webdata_watcher_v1_over_v2 golden_webdata mock_webdata_v2" ;;
    translate) area translate "src/translate/*.rs src/translate/chat/*.rs src/translate/native/*.rs" \
        "ndjson translate_chat translate_other golden golden_native native_over_chat native_alias \
         native_tags faults upstream_limits usage promises proptest_hostile" ;;
    h1) for part in h1-read h1-server h1-client; do run $part; done ;;
    h1-read) area h1-read "src/http/h1/*.rs src/http/h1/raw/mod.rs" \
        "smuggling framing upstream_h1 websocket" h1:: ;;
    h1-server) area h1-server "src/server/h1/*.rs" "smuggling framing websocket limits" h1:: ;;
    h1-client) area h1-client "src/upstream/h1/*.rs" \
        "upstream_h1 upstream_pool upstream_limits faults" h1:: ;;
    *) echo "unknown area $1" >&2; exit 2 ;;
    esac
}

for a in ${*:-path router headers errors translate webdata h1}; do run "$a"; done
