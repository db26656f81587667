"""The examples in README.md and docs/COMMANDS.md, run literally against a
fresh server and compared with what the docs show, so a doc cannot drift
from the server again.

An example is a fenced block right after a `<!-- example -->` line. In it,
each line starting with `$ ` is a shell command, and the lines up to the
next command are its expected output. Commands run in order against one
server per file, with stdout on a terminal (so redis-cli and unread-cli
print their human form, as a reader sees it). The only rewrites: the
default port 7460 becomes the test server's (`-p 7460`, `localhost 7460`)
and `build/unread-cli` becomes the build's unread-cli with that port.

A fenced block that shows such commands but is not an example must say
why with `<!-- not an example: reason -->`, so a new one cannot be left
out by accident.
"""

import os
import pty
import re
import select
import subprocess

from harness import BUILD, REPO, Server

DOCS = ["README.md", os.path.join("docs", "COMMANDS.md")]
MARK = "<!-- example -->"
SKIP = re.compile(r"<!-- not an example: .+ -->")
SHOWS_COMMANDS = re.compile(r"^\$ (redis-cli|build/|nc|printf|echo)", re.M)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def blocks(text):
    """[(line number, marked, skipped, [lines])] of every fenced block."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            start = i
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            k = start - 1
            while k >= 0 and lines[k].strip() == "":
                k -= 1
            before = lines[k] if k >= 0 else ""
            out.append((start + 1, before.strip() == MARK,
                        bool(SKIP.fullmatch(before.strip())),
                        lines[start + 1:j]))
            i = j + 1
        else:
            i += 1
    return out


def steps(block):
    """[(command, expected output)] of one example block."""
    out = []
    for line in block:
        if line.startswith("$ "):
            out.append([line[2:], []])
        else:
            assert out, "example output before any command: %r" % line
            out[-1][1].append(line)
    return [(cmd, "\n".join(exp)) for cmd, exp in out]


def rewrite(cmd, port):
    cmd = cmd.replace("-p 7460", "-p %d" % port)
    cmd = cmd.replace("localhost 7460", "localhost %d" % port)
    cmd = re.sub(r"(^|[\s|])build/unread-cli",
                 r"\1%s -p %d" % (os.path.join(BUILD, "unread-cli"), port),
                 cmd)
    return cmd


def run_on_tty(cmd, timeout=20):
    """Runs cmd with bash, stdout and stderr on a pseudo-terminal; the
    output with CRs and colour codes removed."""
    master, slave = pty.openpty()
    p = subprocess.Popen(["bash", "-c", cmd], stdin=subprocess.DEVNULL,
                         stdout=slave, stderr=slave, cwd=REPO,
                         env=dict(os.environ, TERM="dumb",
                                  UNREADCLI_HISTFILE="/dev/null"))
    os.close(slave)
    chunks = []
    try:
        while True:
            r, _, _ = select.select([master], [], [], timeout)
            if not r:
                raise AssertionError("%r: no output for %ds" % (cmd, timeout))
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child side is closed
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        p.wait(timeout)
    text = b"".join(chunks).decode("utf-8", "replace")
    return ANSI.sub("", text.replace("\r", ""))


def check_file(name):
    text = open(os.path.join(REPO, name)).read()
    found = blocks(text)
    examples = [b for b in found if b[1]]
    for line, marked, skipped, body in found:
        if SHOWS_COMMANDS.search("\n".join(body)):
            assert marked or skipped, \
                "%s:%d shows commands but is neither an example nor marked " \
                "'<!-- not an example: why -->'" % (name, line)
    assert examples, "%s has no example block" % name
    ran = 0
    with Server() as srv:
        for line, _m, _s, body in examples:
            for cmd, want in steps(body):
                got = run_on_tty(rewrite(cmd, srv.port))
                assert got.rstrip("\n") == want.rstrip("\n"), \
                    "%s:%d: %s\n--- the doc shows:\n%s\n--- the server " \
                    "answered:\n%s" % (name, line, cmd, want, got)
                ran += 1
    assert ran > 0
    return ran


def test_readme_examples_run_as_shown():
    assert check_file("README.md") >= 5


def test_commands_md_examples_run_as_shown():
    assert check_file(os.path.join("docs", "COMMANDS.md")) >= 20


def test_the_checker_catches_drift():
    """A wrong expected output is caught, so the two tests above can fail."""
    doc = ["$ redis-cli -p 7460 CNT.TOTAL 1", "(integer) 99"]
    with Server() as srv:
        (cmd, want), = steps(doc)
        got = run_on_tty(rewrite(cmd, srv.port))
        assert got.rstrip("\n") == "(integer) 0"
        assert got.rstrip("\n") != want
    marked = blocks("x\n\n<!-- example -->\n```sh\n$ a\nb\n```\n"
                    "```sh\n$ redis-cli PING\n```\n")
    assert [(m, s) for _l, m, s, _b in marked] == [(True, False),
                                                   (False, False)]
