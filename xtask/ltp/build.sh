#!/bin/bash
# Build LTP's library and only the path-syscall test directories of
# dirs.txt; copy the binaries (tests and their *_child helpers) to $WORK/bin.
# Env: SRC (an LTP checkout, required), WORK (where builds and runs go).
# Run by `cargo xtask ltp`.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=${SRC:?an LTP checkout}
WORK=${WORK:?a work directory}
BIN=$WORK/bin
LOG=$WORK/build-logs
mkdir -p "$BIN" "$LOG"
cd "$SRC" || exit 1
make autotools            > "$LOG/autotools.log" 2>&1 || { echo "make autotools failed"; exit 1; }
./configure               > "$LOG/configure.log" 2>&1 || { echo "configure failed"; exit 1; }
make -j2 -C lib           > "$LOG/lib.log" 2>&1       || { echo "make -C lib failed"; exit 1; }
for d in $(cat "$HERE/dirs.txt"); do
    p=testcases/kernel/syscalls/$d
    if [ ! -d "$p" ]; then echo "$d: no such directory"; continue; fi
    if make -j2 -C "$p" > "$LOG/$d.log" 2>&1; then
        # every executable the Makefile produced (tests and helpers)
        find "$p" -maxdepth 1 -type f -executable ! -name '*.sh' -exec cp -p {} "$BIN/" \;
        echo "$d: ok"
    else
        echo "$d: FAILED (see $LOG/$d.log)"
    fi
done
