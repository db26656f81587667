#!/bin/bash
# badge-callgrind.sh - user-space instructions per badge message, counted
# by callgrind (docs/PERFORMANCE.md, "Badge messages: the badge side in
# instructions"). The VM exposes no hardware counters; callgrind counts
# exactly, whatever else runs on the machine (only the turn's size, and so
# the per-turn share, moves between runs: a few percent).
#
#   bench/badge-callgrind.sh [BUILD] [SUBSCRIBERS] [PORT]
#   PRELOAD=1 bench/badge-callgrind.sh ...   every family holds an entry
#                                            (user 7's), not only CNT
#
# The server runs under valgrind with instrumentation off; pubsub-bench's
# badge phase (SUBSCRIBERS on their own badge:<uid>, 4 writers x 16
# CNT.INCR in flight) runs 14 s; from its 8th second instrumentation is on
# for 5 s, and INFO pubsub_delivered at the window's edges counts the
# messages. Prints instructions per message: the whole server, and the
# badge side (inclusive badges_before + badges_after + badges_flush).
# Needs valgrind and redis-cli. Not for CI: a measurement.
set -e
B=${1:-build}
S=${2:-1000}
PORT=${3:-17461}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
delivered() {
    redis-cli -p "$PORT" info stats | tr -d '\r' |
        awk -F: '/^pubsub_delivered:/{print $2}'
}
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$D/cg" \
    "$B/unreadd" --port "$PORT" --journal no --save-seconds 0 \
    --maxclients 30000 --notify-badges yes --dir "$D/data" \
    >"$D/server.log" 2>&1 &
VP=$!
for _ in $(seq 100); do
    redis-cli -p "$PORT" ping >/dev/null 2>&1 && break
    sleep 0.2
done
if [ -n "$PRELOAD" ]; then
    for c in "CONV.SEQ 7 1 1" "GRP.JOIN 7 1" "GRP.POST 1" "BC.PUBLISH 1" \
        "BC.READ 7 1 0" "DOT.PUSH 1" "DOT.CLICK 7 1" "FEED.FOLLOW 7 2" \
        "FEED.POST 2"; do
        # shellcheck disable=SC2086
        redis-cli -p "$PORT" $c >/dev/null
    done
fi
"$B/pubsub-bench" -m badge -p "$PORT" -s "$S" -c 4 -P 16 -d 14 \
    --warmup 2 >"$D/bench.log" 2>&1 &
BP=$!
sleep 8
d0=$(delivered)
callgrind_control -i on $VP >/dev/null 2>&1
sleep 5
callgrind_control -i off $VP >/dev/null 2>&1
d1=$(delivered)
wait $BP
callgrind_control -d $VP >/dev/null 2>&1
kill $VP
wait $VP 2>/dev/null || true
callgrind_annotate --inclusive=yes "$D/cg.1" 2>/dev/null |
    awk -v m=$((d1 - d0)) '
    /PROGRAM TOTALS/ { gsub(",", "", $1); tot = $1 }
    /badges\.c:badges_(flush|before|after) \[/ && !/=>/ {
        gsub(",", "", $1); side += $1
        split($0, a, ":"); split(a[2], b, " "); v[b[1]] = $1 }
    END {
        printf "messages %d; instructions per message: server %.0f, badge " \
               "side %.0f (flush %.0f, before %.0f, after %.0f)\n", m,
               tot / m, side / m, v["badges_flush"] / m,
               v["badges_before"] / m, v["badges_after"] / m }'
