#!/bin/sh
# deps.sh [build] [test] [bench] [fuzz] - make sure the Debian packages a
# make target needs are present. As root, missing ones are installed with
# apt-get; otherwise the script names them and fails.
set -u

need=""
want() { # want PACKAGE CHECK-COMMAND...
    pkg=$1
    shift
    if ! "$@" >/dev/null 2>&1; then
        need="$need $pkg"
    fi
}

for what in "$@"; do
    case $what in
    build)
        want gcc command -v cc
        want make command -v make
        want pkg-config command -v pkg-config
        want libevent-dev pkg-config --exists libevent
        want libxxhash-dev pkg-config --exists libxxhash
        want liblz4-dev pkg-config --exists liblz4
        want libedit-dev pkg-config --exists libedit
        want libsystemd-dev pkg-config --exists libsystemd
        # TLS (server/tls.c, libunread): OpenSSL 3
        want libssl-dev pkg-config --exists openssl
        ;;
    test)
        want python3 command -v python3
        want redis-tools command -v redis-cli
        want netcat-openbsd command -v nc
        want redis-server command -v redis-server
        # Real Redis clients and tools driving unreadd (test_clients.py)
        want python3-redis /usr/bin/python3 -c "import redis"
        want libhiredis-dev pkg-config --exists hiredis
        want prometheus-redis-exporter command -v prometheus-redis-exporter
        # Failover under real sentinels (test_sentinel.py, faults/failover.py)
        want redis-sentinel command -v redis-sentinel
        # The TLS tests make their own CA and certificates
        want openssl command -v openssl
        ;;
    bench)
        want redis-server command -v redis-server
        # bench/report.py's charts (docs/img/), under Debian's python3
        want python3-matplotlib /usr/bin/python3 -c "import matplotlib"
        # bench/tls.py makes its CA and certificates at run time
        want openssl command -v openssl
        ;;
    fuzz)
        want clang command -v clang
        want libclang-rt-14-dev sh -c 'ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a'
        ;;
    deb)
        want build-essential command -v dpkg-architecture
        want dpkg-dev command -v dpkg-buildpackage
        want debhelper command -v dh
        want binutils command -v objdump
        want systemd command -v systemd-analyze
        ;;
    fmt)
        want clang-format command -v clang-format
        ;;
    esac
done

[ -z "$need" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "deps: installing:$need" >&2
    export DEBIAN_FRONTEND=noninteractive
    # Another make (a parallel one, another worktree) may hold the dpkg
    # lock: wait for it rather than fail.
    apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 || true
    # shellcheck disable=SC2086
    if apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
        --no-install-recommends $need >/dev/null; then
        exit 0
    fi
    echo "deps: apt-get install failed for:$need" >&2
    exit 1
fi
echo "deps: missing Debian packages:$need" >&2
echo "deps: install them with: sudo apt-get install$need" >&2
exit 1
