#!/bin/bash
# Differential LTP run: each test natively, under `interpose run`, and under
# `interpose run --fast`, one at a time, each in a fresh scratch directory.
#
# Usage: run.sh [TEST...]     (default: every runtest/syscalls entry whose
#                              binary is in $WORK/bin)
# Env:   SRC (the LTP checkout), WORK (build.sh's), IP (the interpose binary),
#        MODES="native caps full fast"  TIMEOUT=60  OUT=$WORK/results
# Run by `cargo xtask ltp`.
set -u

SRC=${SRC:?an LTP checkout}
LTP=${WORK:?a work directory}
BIN=$LTP/bin
IP=${IP:-$LTP/interpose}
SCRATCH=$LTP/scratch
OUT=${OUT:-$LTP/results}
TIMEOUT=${TIMEOUT:-60}
MODES=${MODES:-"native caps full fast"}
# The command's capabilities under `interpose run` as root (its CapBnd).
SANDBOX_CAPS=${SANDBOX_CAPS:--all,+chown,+dac_override,+fowner,+fsetid,+kill,+setgid,+setuid,+setpcap,+net_bind_service,+audit_write}
RAW=$OUT/raw
TSV=$OUT/results.tsv

mkdir -p "$RAW" "$SCRATCH"

# Test list: tag and command line from LTP's runtest/syscalls, restricted to
# binaries we built (helpers such as *_child are not listed there).
declare -A CMD
TAGS=()
while read -r tag cmd; do
    bin=${cmd%% *}
    [ -x "$BIN/$bin" ] || continue
    [ -n "${CMD[$tag]+x}" ] && continue
    CMD[$tag]=$cmd
    TAGS+=("$tag")
done < <(grep -Ev '^[[:space:]]*(#|$)' "$SRC/runtest/syscalls")

if [ $# -gt 0 ]; then TAGS=("$@"); fi

if [ ! -x "$IP" ]; then
    echo "run.sh: $IP missing; running native only" >&2
    MODES=native
fi

[ -f "$TSV" ] || printf 'test\tmode\texit\tsecs\ttimed_out\tpassed\tfailed\tbroken\tskipped\twarnings\tTPASS\tTFAIL\tTBROK\tTCONF\tTWARN\n' > "$TSV"

clean_scratch() {
    local d=$1
    # A test killed by the timeout may leave its loop-device mount behind.
    findmnt -rn -o TARGET | grep -F "$d/" | sort -r | while read -r m; do
        umount -l "$m" 2>/dev/null
    done
    rm -rf "$d"
    mkdir -p "$d"
    # world-writable and sticky like /tmp: some tests drop to nobody before
    # LTP creates its temporary directory (symlink03).
    chmod 1777 "$d"
}

count() { grep -cE "(^|[^A-Z])$1([^A-Z]|$)" "$2"; }
summ() { awk -v k="$1" '$1==k && NF==2 {v=$2} END {print (v==""?"-":v)}' "$2"; }

for tag in "${TAGS[@]}"; do
    cmd=${CMD[$tag]:-$tag}
    for mode in $MODES; do
        dir=$SCRATCH/$mode/$tag
        clean_scratch "$dir"
        log=$RAW/$tag.$mode.log
        case $mode in
            native) pre=() ;;
            # Natively, with only the capabilities interpose leaves its
            # command: what fails here is a capability the sandbox drops,
            # not an answer it gives wrongly.
            caps)   pre=(setpriv --inh-caps -all --bounding-set "$SANDBOX_CAPS" --) ;;
            full)   pre=("$IP" run --rw "$dir" --ro "$LTP" --) ;;
            fast)   pre=("$IP" run --fast --rw "$dir" --ro "$LTP" --) ;;
        esac
        t0=$(date +%s.%N)
        # cwd = $BIN so LTP finds .resource_files (helper binaries) in its
        # start directory; PATH so it finds *_child helpers.
        ( cd "$BIN" && exec env TMPDIR="$dir" LTPROOT="$SRC" \
              PATH="$BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
              timeout -k 10 "$TIMEOUT" "${pre[@]}" $cmd ) > "$log" 2>&1 < /dev/null
        rc=$?
        t1=$(date +%s.%N)
        secs=$(echo "$t1 - $t0" | bc)
        to=no; { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && to=yes
        printf '%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
            "$tag" "$mode" "$rc" "$secs" "$to" \
            "$(summ passed "$log")" "$(summ failed "$log")" "$(summ broken "$log")" \
            "$(summ skipped "$log")" "$(summ warnings "$log")" \
            "$(count TPASS "$log")" "$(count TFAIL "$log")" "$(count TBROK "$log")" \
            "$(count TCONF "$log")" "$(count TWARN "$log")" >> "$TSV"
        clean_scratch "$dir"
    done
done
