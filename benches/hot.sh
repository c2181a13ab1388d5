#!/usr/bin/env bash
# Writes link/hot-functions.txt: the functions lingo runs while it serves requests, hottest
# first, which build.rs asks the linker to lay out first in the binary.
#
#   benches/hot.sh BINARY           write the list from BINARY's run (a release build)
#   benches/hot.sh --check BINARY   how many of the list's functions BINARY has, and the
#                                   span of its text section they take
#
# The functions the five cases below run, some 500, lay scattered over a 6.6 MiB text
# section; they missed callgrind's simulated instruction cache ~750 times a whole
# pass-through (nginx: 280). Listed first, hottest first, they missed 4-10% less in each
# case, and lingo's user time a request fell 5-8% in whole and streamed chat completions
# and a whole pass-through (benches/ab.sh A/B runs).
#
# The list is of symbol names, and a Rust symbol's name carries a hash of its crate's
# version, its build and the compiler's version: on another toolchain than the one named
# in the list's first line only the C functions (the allocator's) still match, and after a
# version bump or a dependency update some names no longer do. The linker skips those;
# `--check` counts what still matches. Write the list again from a release build made with
# the toolchain that builds lingo, then build again. The run: benches/ab.sh --instructions,
# one round of its five cases (a native pass-through and a chat completion, whole and
# streamed, and a streamed completion), each case's functions weighted by their share of
# the instructions lingo's own code ran in that case (libc's and the vDSO's left out).
#
# Needs what ab.sh --instructions needs (wrk, valgrind), python3, nm and readelf.
set -euo pipefail
self=$(realpath "$0")
usage() { sed -n '2,25p' "$self"; exit 2; }
check=false
if [[ "${1:-}" == "--check" ]]; then
    check=true
    shift
fi
[[ $# -eq 1 && -f "$1" ]] || usage
binary=$(realpath "$1")
cd "$(dirname "$self")/.."
list=link/hot-functions.txt

if $check; then
    nm -n "$binary" | python3 -c '
import sys
lines = [l.split("#")[0].strip() for l in open(sys.argv[1])]
listed = [l for l in lines if l]
where = {}
for line in sys.stdin:
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tTwW":
        where.setdefault(parts[2], int(parts[0], 16))
found = [where[n] for n in listed if n in where]
print(f"{len(found)} of the {len(listed)} listed functions are in the binary", end="")
if found:
    print(f", within {(max(found) - min(found)) // 1024} KiB from 0x{min(found):x}")
else:
    print()
print(open(sys.argv[1]).readline().strip())
' "$list"
    exit 0
fi

# shellcheck source=benches/common.sh
source benches/common.sh  # the scratch directory, $dir, removed at exit
# The five cases, one round, no cache simulation, whatever the caller's settings.
env -u LINGO_AB_CASES -u LINGO_AB_CACHE LINGO_AB_KEEP="$dir" LINGO_AB_MANGLED=1 \
    LINGO_AB_ROUNDS=1 benches/ab.sh --instructions "$binary"
# The compiler that built the binary, as it says in its .comment section.
toolchain=$(readelf -p .comment "$binary" 2> /dev/null | grep -o 'rustc version [^)]*)' || true)
echo "# ${toolchain:-rustc version unknown}: $(basename "$binary"), by benches/hot.sh" > "$dir/list"
python3 - "$(basename "$binary")" "$dir"/*.cg >> "$dir/list" << 'PY'
import collections, os, re, sys

weight = collections.Counter()
binary = sys.argv[1]  # only its own functions: libc's and the vDSO's are not laid out
for path in sys.argv[2:]:
    own = collections.Counter()
    ob = fn = None
    after_call = False
    for line in open(path, errors="replace"):
        if line.startswith("ob="):
            ob = line[3:].strip()
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line.startswith("calls="):
            after_call = True  # the next line is the call's cost, not the function's own
        elif line[:1].isdigit() or line[:1] in "+-*":
            if after_call:
                after_call = False
            elif fn and ob and os.path.basename(ob.split()[-1]) == binary:
                own[fn] += int(line.split()[1])
    total = sum(own.values())
    for name, cost in own.items():
        weight[re.sub(r"'\d+$", "", name)] += cost / total
for name, _ in weight.most_common():
    print(name)
PY
n=$(($(wc -l < "$dir/list") - 1))
[[ $n -gt 0 ]] || { echo "hot.sh: no function of $(basename "$binary") found in the run" >&2; exit 1; }
mv "$dir/list" "$list"
echo "$n functions written to $list"
