#!/bin/sh
# test-loaded.sh BUILD RUNS - `make test-loaded`: the whole suite (tests/run.py,
# what `make test` runs) RUNS times, each beside a CPU hog that keeps one
# core busy (a shell busy loop, as on a developer's machine that builds
# something else), then "k of N runs passed". Each run's output is kept
# in BUILD/test-loaded/run-I.log; the failed tests of a run are printed.
# Exit status 1 unless every run passed.
set -u
build=${1:-build}
runs=${2:-10}
logs=$build/test-loaded
mkdir -p "$logs"
hog=""
stop_hog() {
    [ -n "$hog" ] && kill "$hog" 2>/dev/null && wait "$hog" 2>/dev/null
    hog=""
}
trap 'stop_hog; exit 130' INT TERM
passed=0
i=1
while [ "$i" -le "$runs" ]; do
    sh -c 'while :; do :; done' &
    hog=$!
    t0=$(date +%s)
    python3 tests/run.py --build "$build" >"$logs/run-$i.log" 2>&1
    rc=$?
    stop_hog
    last=$(tail -1 "$logs/run-$i.log")
    echo "run $i of $runs: $last ($(($(date +%s) - t0)) s, load $(cut -d' ' -f1-3 /proc/loadavg))"
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
    else
        sed -n '/^failed (/,/^[0-9]* passed/p' "$logs/run-$i.log" | \
            grep '^  ' | sed 's/^/    /'
    fi
    i=$((i + 1))
done
echo "test-loaded: $passed of $runs runs passed"
[ "$passed" -eq "$runs" ]
