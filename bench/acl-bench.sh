#!/bin/sh
# The ACL check's cost (issue 33): bench/acl.py, cnt-incr P16 with 100
# ACL users against none, in alternating runs; writes
# bench/results/acl-STAMP.json. `make bench-acl` runs it; arguments are
# passed on (e.g. --reps 9 --seconds 10).
set -e
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
[ -x "$BUILD/unread-bench" ] && [ -x "$BUILD/unreadd" ] || {
    echo "acl-bench: build $BUILD/unreadd and $BUILD/unread-bench first (make)" >&2
    exit 1
}
exec python3 bench/acl.py --build "$BUILD" --results auto "$@"
