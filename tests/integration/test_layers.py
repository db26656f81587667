"""The house's layering (docs/ARCHITECTURE.md): each directory includes
only headers of the directories below it, so no include circle can form.

    protocol/  <  common/  <  server/store/  <  persistence/  <  server/
    protocol/  <  client-lib/

A header is found by name among every directory's headers; an include of
a header that lives in a directory above the includer fails here.
"""

import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# directory -> the directories whose headers it may include (besides its own)
ALLOWED = {
    "protocol": [],
    "common": [],
    "server/store": ["protocol", "common"],
    "persistence": ["server/store", "protocol", "common"],
    "server": ["persistence", "server/store", "protocol", "common"],
    "client-lib": ["protocol"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(d):
    path = os.path.join(REPO, d)
    return [os.path.join(path, n) for n in sorted(os.listdir(path))
            if n.endswith((".c", ".h", ".def"))]


def owners():
    """header name -> the directory that holds it"""
    own = {}
    for d in ALLOWED:
        for p in sources(d):
            own.setdefault(os.path.basename(p), d)
    return own


def test_each_directory_includes_only_those_below():
    own = owners()
    bad = []
    for d, below in ALLOWED.items():
        for p in sources(d):
            with open(p, encoding="utf-8") as f:
                text = f.read()
            for name in INCLUDE.findall(text):
                where = own.get(os.path.basename(name))
                if where is None or where == d or where in below:
                    continue
                bad.append("%s includes %s (%s/)" % (
                    os.path.relpath(p, REPO), name, where))
    assert not bad, "\n".join(bad)


def test_the_check_itself_catches_an_upward_include():
    own = owners()
    # persistence including the executor is what the layering forbids
    assert own["exec.h"] == "server"
    assert "server" not in ALLOWED["persistence"]
    assert own["persist.h"] == "persistence" and own["db.h"] == "server/store"
