#!/usr/bin/env bash
# What an undo journal costs (docs/undo.md, "Cost"): each workload run
# RUNS times under `interpose run` with and without `--journal`, medians of
# the wall time, and `interpose undo` of the journalled run.
#
# usage: docs/bench/undo-cost.sh [INTERPOSE] [RUNS] [SCRATCH]
# (a release build; SCRATCH on the file system to measure, default a new
# directory in $TMPDIR). Prints one table; keeps no samples.
set -euo pipefail
B=${1:-target/release/interpose}
RUNS=${2:-7}
SCRATCH=${3:-$(mktemp -d)}
B=$(realpath "$B")
cd "$SCRATCH"
export XDG_STATE_HOME=$SCRATCH/state

# Median of the wall times (seconds) of RUNS runs of "$@"; SETUP is run
# (untimed) before each.
median() {
    local setup=$1; shift
    local times=()
    for _ in $(seq "$RUNS"); do
        eval "$setup"
        local t0 t1
        t0=$(date +%s.%N)
        "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
        t1=$(date +%s.%N)
        times+=("$(echo "$t1 - $t0" | bc -l)")
    done
    printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

fresh_journal() { rm -rf "$SCRATCH/j"; }

# A read-mostly tree: 2,000 files of 4 KiB in 20 directories.
rm -rf ws && mkdir ws
for d in $(seq 20); do
    mkdir ws/d$d
    for f in $(seq 100); do head -c 4096 /dev/urandom > ws/d$d/f$f; done
done
READ='cat ws/d*/f* > /dev/null; grep -rq needle-not-there ws || true; md5sum ws/d1/* > /dev/null; echo done > ws/out.txt'

row() { printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4"; }
echo "| workload | without --journal (s) | with --journal (s) | undo (s) |"
echo "|---|---|---|---|"

plain=$(median "rm -f ws/out.txt" "$B" run -q --rw ws -- sh -c "$READ")
journ=$(median "rm -f ws/out.txt; fresh_journal" "$B" run -q --rw ws --journal j -- sh -c "$READ")
row "read 2,000 files (8 MiB), write 1" "$plain" "$journ" "-"

# 1,000 small files rewritten (each kept once: a 4 KiB copy).
SMALL='for f in ws/d1/f* ws/d2/f* ws/d3/f* ws/d4/f* ws/d5/f* ws/d6/f* ws/d7/f* ws/d8/f* ws/d9/f* ws/d10/f*; do echo x > "$f"; done'
plain=$(median "true" "$B" run -q --rw ws -- sh -c "$SMALL")
journ=$(median "fresh_journal" "$B" run -q --rw ws --journal j -- sh -c "$SMALL")
undo=$(median "fresh_journal; $B run -q --rw ws --journal j -- sh -c '$SMALL'" "$B" undo j)
row "rewrite 1,000 files of 4 KiB" "$plain" "$journ" "$undo"

# 1,000 files made (a directory of them: only the directory is journalled)
# and 1,000 made one by one in a tree that was there.
MADE='mkdir ws/new; for i in $(seq 1000); do echo x > ws/new/f$i; done'
plain=$(median "rm -rf ws/new" "$B" run -q --rw ws -- sh -c "$MADE")
journ=$(median "rm -rf ws/new; fresh_journal" "$B" run -q --rw ws --journal j -- sh -c "$MADE")
row "make a directory of 1,000 files" "$plain" "$journ" "-"
MADE_OLD='for i in $(seq 1000); do echo x > ws/d11/n$i; done'
plain=$(median "rm -f ws/d11/n*" "$B" run -q --rw ws -- sh -c "$MADE_OLD")
journ=$(median "rm -f ws/d11/n*; fresh_journal" "$B" run -q --rw ws --journal j -- sh -c "$MADE_OLD")
row "make 1,000 files in an existing directory" "$plain" "$journ" "-"

# One GiB file truncated: its content kept.
head -c 1073741824 /dev/zero | tr '\0' 'z' > big.bin
cp big.bin ws/big.bin
plain=$(median "cp big.bin ws/big.bin" "$B" run -q --rw ws -- sh -c ': > ws/big.bin')
journ=$(median "cp big.bin ws/big.bin; fresh_journal" "$B" run -q --rw ws --journal j -- sh -c ': > ws/big.bin')
undo=$(median "cp big.bin ws/big.bin; fresh_journal; $B run -q --rw ws --journal j -- sh -c ': > ws/big.bin'" "$B" undo j)
row "truncate a 1 GiB file" "$plain" "$journ" "$undo"
fs=$(stat -f -c %T "$SCRATCH")
echo
echo "file system: $fs; $RUNS runs each, medians; $(uname -r); $(nproc) CPUs"
