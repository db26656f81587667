"""libunread's ABI (docs/CLIENT.md, "ABI"): the shared library carries the
SONAME libunread.so.MAJOR of unread.h's version, with the real-name and
linker-name links beside it, and exports the unread_* functions of
unread.h and nothing else - no codec, no internal helper a program could
come to depend on.
"""

import os
import re
import subprocess

from harness import BUILD, REPO

HEADERS = [os.path.join(REPO, "client-lib", "unread.h")]


def version():
    text = open(HEADERS[0], encoding="utf-8").read()
    return [int(re.search(r"#define UNREAD_VERSION_%s (\d+)" % k, text)
                .group(1)) for k in ("MAJOR", "MINOR", "PATCH")]


def exported():
    """name -> nm type of every defined dynamic symbol"""
    out = subprocess.run(["nm", "-D", "--defined-only",
                          os.path.join(BUILD, "libunread.so")],
                         capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            syms[parts[-1].split("@")[0]] = parts[-2]
    return syms


def declared():
    """the non-inline functions unread.h declares"""
    text = open(HEADERS[0], encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"static inline[^{]*\{.*?\n\}", "", text, flags=re.S)
    return set(re.findall(r"\b(unread_\w+)\s*\(", text)) - {
        n for n in re.findall(r"typedef\s+\w+\s+(unread_\w+)\s*\(", text)}


def test_only_unread_symbols_are_exported():
    syms = exported()
    # a version node (type A) is the script's, not a symbol of the code
    bad = sorted(n for n, t in syms.items()
                 if t != "A" and not n.startswith("unread_"))
    assert not bad, "exported beyond unread_*: %s" % bad
    assert "LIBUNREAD_%d" % version()[0] in syms


def test_every_declared_function_is_exported():
    syms = exported()
    missing = sorted(declared() - set(syms))
    assert not missing, "declared in unread.h, not exported: %s" % missing
    # and the check sees the functions: the header declares many
    assert len(declared()) > 100


def test_soname_and_links():
    major, minor, patch = version()
    real = "libunread.so.%d.%d.%d" % (major, minor, patch)
    soname = "libunread.so.%d" % major
    assert os.path.isfile(os.path.join(BUILD, real))
    assert os.readlink(os.path.join(BUILD, soname)) == real
    assert os.readlink(os.path.join(BUILD, "libunread.so")) == soname
    dyn = subprocess.run(["objdump", "-p", os.path.join(BUILD, real)],
                         capture_output=True, text=True, check=True).stdout
    assert re.search(r"SONAME\s+%s\b" % re.escape(soname), dyn), dyn


def test_the_check_catches_a_stray_symbol():
    # the static archive has the internals the .so hides: the same filter
    # over it must find them, or it could not find them in the .so either
    out = subprocess.run(["nm", "--defined-only", "-g",
                          os.path.join(BUILD, "libunread.a")],
                         capture_output=True, text=True, check=True).stdout
    names = {line.split()[-1] for line in out.splitlines()
             if len(line.split()) == 3}
    assert any(n.startswith("ur_frame_") for n in names)
    assert any(n.startswith("uc_") for n in names)


def test_install_and_uninstall():
    """make install puts the library with its SONAME links, the headers and
    unread.pc under DESTDIR; make uninstall removes every file it put."""
    import tempfile
    major, minor, patch = version()
    with tempfile.TemporaryDirectory() as dest:
        args = ["make", "-s", "-C", REPO, "BUILD=" + BUILD, "DESTDIR=" + dest,
                "PREFIX=/opt/u"]
        subprocess.run(args + ["install-files"], check=True,
                       capture_output=True)
        lib = os.path.join(dest, "opt/u/lib")
        real = "libunread.so.%d.%d.%d" % (major, minor, patch)
        assert os.path.isfile(os.path.join(lib, real))
        assert os.readlink(os.path.join(lib, "libunread.so.%d" % major)) == real
        assert os.readlink(os.path.join(lib, "libunread.so")) == \
            "libunread.so.%d" % major
        pc = open(os.path.join(lib, "pkgconfig", "unread.pc")).read()
        assert "Version: %d.%d.%d" % (major, minor, patch) in pc
        assert "libdir=/opt/u/lib" in pc
        for h in ("unread.h", "unread_libevent.h"):
            assert os.path.isfile(os.path.join(dest, "opt/u/include", h))
        unit = open(os.path.join(dest, "opt/u/share/doc/unreadd",
                                 "unreadd.service")).read()
        assert "ExecStart=/opt/u/bin/unreadd " in unit
        assert "Type=notify" in unit
        subprocess.run(args + ["uninstall"], check=True, capture_output=True)
        left = [os.path.join(d, f) for d, _, fs in os.walk(dest) for f in fs]
        assert left == [], left
