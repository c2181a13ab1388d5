#!/usr/bin/env bash
# Writes link/hot-functions.txt: the functions lingo runs while it serves requests, hottest
# first, which build.rs asks the linker to lay out first in the binary.
#
#   benches/hot.sh BINARY           write the list from BINARY's run (a release build)
#   benches/hot.sh --check BINARY   how many of the list's functions BINARY has, and where
#
# A request runs ~20,000 instructions spread over some 500 functions of an 8 MiB text
# section; laid out where the compiler left them, they missed callgrind's simulated
# instruction cache ~750 times a whole pass-through (nginx: 280). Listed first, hottest
# first, they missed 3-9% less, and a whole pass-through took 7-10% less user time (three
# A/B runs of benches/ab.sh, 4-8 rounds each; see README, stop 45).
#
# The list is of symbol names, and a name carries a hash of its crate's version and
# build: after a version bump or a dependency update some no longer match (the linker
# skips those without a word, and their functions fall back to the compiler's order).
# `--check` counts the ones that still match; write the list again from a release build
# when many do not. The run: benches/ab.sh --instructions, one round of its five cases (a
# native pass-through and chat completions, whole and streamed, and a streamed
# completion), each case's functions weighted by their share of its instructions.
#
# Needs what ab.sh --instructions needs (wrk, valgrind), python3, and nm.
set -euo pipefail
cd "$(dirname "$0")/.."
list=link/hot-functions.txt

if [[ "${1:-}" == "--check" ]]; then
    [[ $# -eq 2 ]] || { sed -n '2,24p' "$0"; exit 2; }
    nm "$2" | python3 -c '
import sys
listed = [l.strip() for l in open(sys.argv[1]) if l.strip()]
text = [l.split()[-1] for l in sys.stdin if len(l.split()) == 3 and l.split()[1] in "tT"]
found = set(listed) & set(text)
print(f"{len(found)} of the {len(listed)} listed functions are in the binary")
' "$list"
    exit 0
fi
[[ $# -eq 1 ]] || { sed -n '2,24p' "$0"; exit 2; }

keep=$(mktemp -d)
trap 'rm -rf "$keep"' EXIT
LINGO_AB_KEEP="$keep" LINGO_AB_MANGLED=1 LINGO_AB_ROUNDS=1 benches/ab.sh --instructions "$1"
python3 - "$(basename "$1")" "$keep"/*.cg > "$list" << 'PY'
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
echo "$(wc -l < "$list") functions written to $list"
