"""The build under `make -jN` on a fresh machine (issue 34): the Debian
packages must be there before the first compile. Here the package check
is a slow stand-in (DEPS_SH) that leaves a stamp when it is done, and the
compiler a stand-in (CC) that records whether the stamp was there when it
was called, then fails, so that make stops at once: no real package and
no real compile is involved, and every target is tried in a fresh build
directory.
"""

import os
import shutil
import subprocess
import tempfile

from harness import REPO

FAKE_DEPS = """#!/bin/sh
# a package check that takes its time; `build test` after `build`
sleep 1
echo "$*" >>"%(dir)s/deps.log"
touch "%(dir)s/deps-$1-done"
"""

FAKE_CC = """#!/bin/sh
if [ -e "%(dir)s/deps-build-done" ]; then
    echo after >>"%(dir)s/cc.log"
else
    echo BEFORE >>"%(dir)s/cc.log"
fi
exit 1
"""


def _make(target, jobs=8):
    tmp = tempfile.mkdtemp(prefix="unreadd-make-")
    try:
        for name, text in (("deps.sh", FAKE_DEPS), ("cc", FAKE_CC)):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text % {"dir": tmp})
            os.chmod(path, 0o755)
        p = subprocess.run(
            ["make", "-j%d" % jobs, "--no-print-directory",
             "BUILD=" + os.path.join(tmp, "build"),
             "CC=" + os.path.join(tmp, "cc"),
             "DEPS_SH=sh " + os.path.join(tmp, "deps.sh"), target],
            cwd=REPO, capture_output=True, text=True, timeout=120)
        read = lambda n: open(os.path.join(tmp, n)).read().split("\n") \
            if os.path.exists(os.path.join(tmp, n)) else []
        return p, [x for x in read("cc.log") if x], \
            [x for x in read("deps.log") if x]
    finally:
        shutil.rmtree(tmp)


def test_make_jobs_check_packages_before_any_compile():
    for target in ("all", "run", "test"):
        p, cc, deps = _make(target)
        out = p.stdout + p.stderr
        # make failed at the stand-in compiler, as it should...
        assert p.returncode != 0 and cc, (target, out)
        # ...and never before the package check was done
        assert cc == ["after"] * len(cc), (target, cc, out)
        assert deps[0] == "build", (target, deps)
        if target == "test":
            # the test packages after the build ones, not at the same time
            assert deps == ["build", "build test"], (target, deps, out)


test_make_jobs_check_packages_before_any_compile.timeout = 120
