#!/bin/sh
# package.sh DEBDIR - checks the Debian packages `make deb` built into
# DEBDIR: each package's files, the conffile, the exported symbols and
# SONAME of libunread, the systemd unit (systemd-analyze verify, and its
# security exposure at most 3.0), the maintainer scripts; then, in a
# scratch root the packages are unpacked into (dpkg -x), builds the async
# example with `pkg-config --cflags --libs unread libevent` against the
# packaged library and runs it against three packaged servers, one
# restarted mid-run. Ends with "N passed, N failed".
set -u

DEBDIR=$(cd "${1:-build-pkg}" && pwd)
REPO=$(cd "$(dirname "$0")/.." && pwd)
ROOT=$(mktemp -d)
PIDS=""
pass=0
fail=0
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null; done
    rm -rf "$ROOT"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { # check NAME COMMAND...
    name=$1
    shift
    if "$@" >"$ROOT/.out" 2>&1; then ok "$name"; else
        bad "$name"
        sed 's/^/    /' "$ROOT/.out" | tail -20
    fi
}

deb() { ls "$DEBDIR"/"$1"_*.deb 2>/dev/null | head -1; }
has() { # has PACKAGE PATH...: the package holds each path
    d=$(deb "$1")
    [ -n "$d" ] || { echo "no $1 package in $DEBDIR"; return 1; }
    shift
    list=$(dpkg-deb -c "$d" | awk '{print $6}' | sed 's|^\.||')
    for p in "$@"; do
        echo "$list" | grep -qx "$p" || { echo "missing $p"; return 1; }
    done
}

MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
VER=$(sed -n 's/^#define UNREAD_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)/\2/p' \
    "$REPO/client-lib/unread.h" | paste -sd.)
MAJOR=${VER%%.*}

check "unreadd files" has unreadd /usr/bin/unreadd \
    /etc/unreadd/unreadd.conf /lib/systemd/system/unreadd.service
check "libunread1 files" has libunread1 \
    "/usr/lib/$MA/libunread.so.$VER" "/usr/lib/$MA/libunread.so.$MAJOR"
check "libunread-dev files" has libunread-dev /usr/include/unread.h \
    /usr/include/unread_libevent.h "/usr/lib/$MA/libunread.a" \
    "/usr/lib/$MA/libunread.so" "/usr/lib/$MA/pkgconfig/unread.pc"
check "unread-tools files" has unread-tools /usr/bin/unread-cli \
    /usr/bin/unread-bench
check "no library in the server package" sh -c \
    "! dpkg-deb -c '$(deb unreadd)' | grep -q 'libunread'"

conffiles() { dpkg-deb -I "$(deb unreadd)" conffiles; }
check "the configuration is a conffile" sh -c \
    "dpkg-deb -I '$(deb unreadd)' conffiles | grep -qx /etc/unreadd/unreadd.conf"
postinst() {
    dpkg-deb -I "$(deb unreadd)" postinst >"$ROOT/postinst" &&
        grep -q "adduser --system" "$ROOT/postinst" &&
        grep -q "/var/lib/unreadd" "$ROOT/postinst" &&
        grep -q "systemctl\|deb-systemd" "$ROOT/postinst"
}
check "postinst makes the user and data dir, enables the unit" postinst
check "libunread1's shlibs name the SONAME" sh -c \
    "dpkg-deb -I '$(deb libunread1)' shlibs | grep -q 'libunread $MAJOR libunread1'"

for p in unreadd libunread1 libunread-dev unread-tools; do
    dpkg -x "$(deb $p)" "$ROOT" || bad "dpkg -x $p"
done
LIB="$ROOT/usr/lib/$MA"

symbols() {
    out=$(nm -D --defined-only "$LIB/libunread.so.$MAJOR" | awk '$2 != "A" {print $3}' |
          sed 's/@.*//' | grep -v '^unread_')
    [ -z "$out" ] || { echo "exported beyond unread_*:"; echo "$out"; return 1; }
    nm -D --defined-only "$LIB/libunread.so.$MAJOR" | grep -q ' unread_async_connect'
}
check "only unread_* exported" symbols
check "SONAME libunread.so.$MAJOR" sh -c \
    "objdump -p '$LIB/libunread.so.$VER' | grep -q 'SONAME *libunread.so.$MAJOR\$'"
check "unreadd links libsystemd, libunread does not" sh -c \
    "objdump -p '$ROOT/usr/bin/unreadd' | grep -q 'NEEDED *libsystemd' &&
     ! objdump -p '$LIB/libunread.so.$VER' | grep -q 'NEEDED *lib\(systemd\|event\)'"

unit() {
    sed "s|/usr/bin/unreadd|$ROOT/usr/bin/unreadd|" \
        "$ROOT/lib/systemd/system/unreadd.service" >"$ROOT/unreadd.service"
    grep -q '^Type=notify' "$ROOT/unreadd.service" &&
        systemd-analyze verify "$ROOT/unreadd.service"
}
check "the unit verifies (Type=notify)" unit
security() {
    level=$(systemd-analyze security --offline=yes "$ROOT/unreadd.service" |
            sed -n 's/.*Overall exposure level for unreadd.service: \([0-9.]*\).*/\1/p')
    echo "exposure $level"
    [ -n "$level" ] && awk -v l="$level" 'BEGIN { exit !(l <= 3.0) }'
}
check "systemd-analyze security <= 3.0" security

# a program built against the packaged library, with pkg-config
build_example() {
    PKG_CONFIG_SYSROOT_DIR="$ROOT" PKG_CONFIG_PATH="$LIB/pkgconfig" \
        PKG_CONFIG_LIBDIR="$LIB/pkgconfig:/usr/lib/$MA/pkgconfig:/usr/share/pkgconfig" \
        sh -c "cc -std=c11 -D_GNU_SOURCE -Wall -Werror -o '$ROOT/async_badge' \
            '$ROOT/usr/share/doc/libunread-dev/examples/async_badge.c' \
            \$(pkg-config --cflags --libs unread libevent)" &&
        LD_LIBRARY_PATH="$LIB" ldd "$ROOT/async_badge" | grep -q "$LIB/libunread.so.$MAJOR"
}
check "async example builds with pkg-config against the package" build_example

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
start() { # start N PORT: a packaged server on a kept data dir
    mkdir -p "$ROOT/data$1"
    "$ROOT/usr/bin/unreadd" --port "$2" --dir "$ROOT/data$1" \
        --journal-fsync always --config "$ROOT/etc/unreadd/unreadd.conf" \
        --loglevel warning >>"$ROOT/server$1.log" 2>&1 &
    eval "PID$1=$!"
    PIDS="$PIDS $!"
    for _ in $(seq 50); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1',$2),0.2)" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
run_example() {
    P1=$(free_port) P2=$(free_port) P3=$(free_port)
    start 1 "$P1" && start 2 "$P2" && start 3 "$P3" || return 1
    LD_LIBRARY_PATH="$LIB" "$ROOT/async_badge" \
        "127.0.0.1:$P1,127.0.0.1:$P2,127.0.0.1:$P3" 100000 64 \
        >"$ROOT/example.out" 2>&1 &
    ex=$!
    sleep 0.5
    kill -9 "$PID2"
    sleep 1
    start 2 "$P2" || return 1
    wait "$ex"
    rc=$?
    cat "$ROOT/example.out"
    [ $rc -eq 0 ] && grep -q '^final ops=100000 ' "$ROOT/example.out" &&
        grep -q 'mismatches=0' "$ROOT/example.out"
}
check "the packaged async example rides out a shard restart" run_example

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
