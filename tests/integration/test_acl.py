"""ACL users as Redis 6+ has them (issue 33): ACL SETUSER and every rule
form, AUTH user pass on RESP (and HELLO 3 AUTH) and on the binary
protocol, NOPERM with Redis's texts, ACL LOG, a user deleted while
connected, ACL LOAD / SAVE with the aclfile, `user` lines in the config
file, requirepass as the default user's password, redaction, and
redis-cli / redis-py against the real server."""

import hashlib
import os
import subprocess
import tempfile
import textwrap
import time

from harness import (E, Push, Resp, Server, ServerExited, assert_err,
                     encode_multibulk, is_err, pairs)
from test_batch import batch

DEBIAN_PY = "/usr/bin/python3"
NOPERM_CMD = "NOPERM this user has no permissions to run the '%s' command"
NOPERM_KEY = ("NOPERM this user has no permissions to access one of the "
              "keys used as arguments")
NOPERM_CHAN = ("NOPERM this user has no permissions to access one of the "
               "channels used as arguments")
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."


def login(srv, user, pw):
    c = srv.resp()
    assert c.cmd("AUTH", user, pw) == "OK"
    return c


def getuser(c, name):
    return pairs(c.cmd("ACL", "GETUSER", name))


def test_default_user_and_requirepass():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("ACL", "WHOAMI") == b"default"
        assert c.cmd("ACL", "LIST") == [b"user default on nopass ~* &* +@all"]
        assert c.cmd("ACL", "USERS") == [b"default"]
        # no password: AUTH with one argument is Redis's error
        assert_err(c.cmd("AUTH", "x"), "ERR AUTH <password> called without")
        # requirepass is the default user's password
        assert c.cmd("CONFIG", "SET", "requirepass", "pw1") == "OK"
        h = hashlib.sha256(b"pw1").hexdigest().encode()
        assert getuser(c, "default")["passwords"] == [h]
        with srv.resp() as d:
            assert_err(d.cmd("CNT.GET", 1, 0), "NOAUTH")
            assert_err(d.cmd("AUTH", "nope"), WRONGPASS)
            assert d.cmd("AUTH", "pw1") == "OK"
            assert d.cmd("AUTH", "default", "pw1") == "OK"
            assert d.cmd("CNT.GET", 1, 0) == 0
        assert c.cmd("CONFIG", "SET", "requirepass", "") == "OK"
        assert getuser(c, "default")["flags"] == [b"on", b"nopass"]
        with srv.resp() as d:
            assert d.cmd("CNT.GET", 1, 0) == 0
    with Server(requirepass="s") as srv, srv.resp() as c:
        assert_err(c.cmd("CNT.GET", 1, 0), "NOAUTH")
        assert c.cmd("AUTH", "s") == "OK"
        assert c.cmd("ACL", "WHOAMI") == b"default"


def test_passwords_rules():
    with Server() as srv, srv.resp() as c:
        h2 = hashlib.sha256(b"two").hexdigest()
        assert c.cmd("ACL", "SETUSER", "u", "on", ">one", "#" + h2,
                     "+@all", "~*") == "OK"
        u = getuser(c, "u")
        assert sorted(u["passwords"]) == sorted(
            [hashlib.sha256(b"one").hexdigest().encode(), h2.encode()])
        for pw in ("one", "two"):
            with srv.resp() as d:
                assert d.cmd("AUTH", "u", pw) == "OK"
                assert d.cmd("ACL", "WHOAMI") == b"u"
        # <pass and !hash remove; removing one that is not there fails
        assert c.cmd("ACL", "SETUSER", "u", "<one", "!" + h2) == "OK"
        assert getuser(c, "u")["passwords"] == []
        assert_err(c.cmd("ACL", "SETUSER", "u", "<one"),
                   "ERR Error in ACL SETUSER modifier '<': The password you "
                   "are trying to remove from the user does not exist")
        with srv.resp() as d:
            assert_err(d.cmd("AUTH", "u", "one"), WRONGPASS)
        # a bad hash
        for bad in ("#abc", "#" + "A" * 64, "#" + "g" * 64):
            assert_err(c.cmd("ACL", "SETUSER", "u", bad),
                       "ERR Error in ACL SETUSER modifier '%s': The password "
                       "hash must be exactly 64 characters" % bad)
        # nopass: any password; resetpass: none works
        assert c.cmd("ACL", "SETUSER", "u", "nopass") == "OK"
        with srv.resp() as d:
            assert d.cmd("AUTH", "u", "anything") == "OK"
        assert c.cmd("ACL", "SETUSER", "u", ">x", "resetpass") == "OK"
        assert getuser(c, "u")["flags"] == [b"on"]
        with srv.resp() as d:
            assert_err(d.cmd("AUTH", "u", "x"), WRONGPASS)
        # off: the right password is refused too
        assert c.cmd("ACL", "SETUSER", "u", ">x", "off") == "OK"
        with srv.resp() as d:
            assert_err(d.cmd("AUTH", "u", "x"), WRONGPASS)
            assert_err(d.cmd("AUTH", "nosuchuser", "x"), WRONGPASS)
        assert c.cmd("ACL", "SETUSER", "u", "on") == "OK"
        with srv.resp() as d:
            assert d.cmd("AUTH", "u", "x") == "OK"


def test_command_rules():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("ACL", "SETUSER", "w", "on", ">p", "allkeys",
                     "+@cnt", "-cnt.set", "+ping") == "OK"
        assert getuser(c, "w")["commands"] == b"-@all +@cnt -cnt.set +ping"
        d = login(srv, "w", "p")
        assert d.cmd("CNT.INCR", 1, 0) == [1, 1]
        assert d.cmd("PING") == "PONG"
        assert_err(d.cmd("CNT.SET", 1, 0, 5), NOPERM_CMD % "cnt.set")
        assert_err(d.cmd("CONV.GET", 1, 2), NOPERM_CMD % "conv.get")
        assert_err(d.cmd("CONFIG", "GET", "x"), NOPERM_CMD % "config|get")
        # +@read -@write; categories are the op table's
        assert c.cmd("ACL", "SETUSER", "w", "nocommands", "+@read") == "OK"
        assert getuser(c, "w")["commands"] == b"-@all +@read"
        assert d.cmd("CNT.GET", 1, 0) == 1
        assert_err(d.cmd("CNT.INCR", 1, 0), NOPERM_CMD % "cnt.incr")
        assert c.cmd("ACL", "SETUSER", "w", "allcommands", "-@write",
                     "-@dangerous") == "OK"
        assert getuser(c, "w")["commands"] == b"+@all -@write -@dangerous"
        assert d.cmd("CNT.GET", 1, 0) == 1
        assert_err(d.cmd("CNT.INCR", 1, 0), NOPERM_CMD % "cnt.incr")
        assert_err(d.cmd("FLUSHALL"), NOPERM_CMD % "flushall")
        assert_err(d.cmd("INFO"), NOPERM_CMD % "info")
        # a later rule on the same target replaces the earlier one
        assert c.cmd("ACL", "SETUSER", "w", "-cnt.get", "+cnt.get") == "OK"
        assert getuser(c, "w")["commands"] == \
            b"+@all -@write -@dangerous +cnt.get"
        # subcommands: +config|get on a user without config
        assert c.cmd("ACL", "SETUSER", "w", "+config|get",
                     "+client", "-client|kill") == "OK"
        assert pairs(d.cmd("CONFIG", "GET", "maxmemory")) == \
            {"maxmemory": b"0"}
        assert_err(d.cmd("CONFIG", "SET", "maxmemory", "1"),
                   NOPERM_CMD % "config|set")
        assert isinstance(d.cmd("CLIENT", "ID"), int)
        assert_err(d.cmd("CLIENT", "KILL", "ID", "1"),
                   NOPERM_CMD % "client|kill")
        line = c.cmd("ACL", "LIST")[1].decode()
        assert line.endswith("+config|get -client|kill") or \
            "+config|get" in line and "-client|kill" in line, line
        # unknown commands and categories, junk
        for bad, why in (("+nosuch", "Unknown command or category name in "
                          "ACL"),
                         ("-@nosuch", "Unknown command or category name in "
                          "ACL"),
                         ("+nosuch|x", "Unknown command or category name "
                          "in ACL"),
                         ("+config|", "Syntax error"),
                         ("bogus", "Syntax error"),
                         ("(~x +get)", "Selectors are not supported")):
            assert_err(c.cmd("ACL", "SETUSER", "w", bad),
                       "ERR Error in ACL SETUSER modifier '%s': %s"
                       % (bad.split(" ")[0] if bad[0] != "(" else bad, why))
        d.close()


def test_key_rules():
    with Server() as srv, srv.resp() as c, srv.bin() as b:
        assert c.cmd("ACL", "SETUSER", "k", "on", ">p", "+@all",
                     "~1*", "%R~2*", "%W~3*") == "OK"
        assert getuser(c, "k")["keys"] == b"~1* %R~2* %W~3*"
        d = login(srv, "k", "p")
        assert d.cmd("CNT.INCR", 10, 0) == [1, 1]
        assert d.cmd("CNT.GET", 10, 0) == 1
        assert d.cmd("CNT.GET", 20, 0) == 0
        assert_err(d.cmd("CNT.INCR", 20, 0), NOPERM_KEY)
        assert d.cmd("CNT.INCR", 30, 0) == [1, 1]
        assert_err(d.cmd("CNT.GET", 30, 0), NOPERM_KEY)
        assert_err(d.cmd("CNT.GET", 40, 0), NOPERM_KEY)
        # every uid of a many-user command, gid of RCPT, global objects
        assert d.cmd("USER.MBADGE", 10, 11)[0] is not None
        assert_err(d.cmd("USER.MBADGE", 10, 40), NOPERM_KEY)
        assert_err(d.cmd("BC.PUBLISH", 77), NOPERM_KEY)
        assert d.cmd("BC.PUBLISH", 17) is not None
        # commands without keys are not refused by key patterns
        assert d.cmd("PING") == "PONG"
        # the binary protocol: integers are matched as decimal text
        assert b.call("AUTH", "k", "p") == "OK"
        assert b.call("CNT.INCR", 12, 0, 1) == [1, 1]
        v = b.call("CNT.INCR", 42, 0, 1)
        assert is_err(v, code=E["NOPERM"]) and v.text == NOPERM_KEY[7:], v
        # allkeys, resetkeys, and a pattern after * is an error
        assert c.cmd("ACL", "SETUSER", "k", "allkeys") == "OK"
        assert d.cmd("CNT.GET", 40, 0) == 0
        assert_err(c.cmd("ACL", "SETUSER", "k", "~x"),
                   "ERR Error in ACL SETUSER modifier '~x': Adding a pattern "
                   "after the * pattern")
        assert c.cmd("ACL", "SETUSER", "k", "resetkeys") == "OK"
        assert getuser(c, "k")["keys"] == b""
        assert_err(d.cmd("CNT.GET", 10, 0), NOPERM_KEY)
        assert_err(c.cmd("ACL", "SETUSER", "k", "%X~1"),
                   "ERR Error in ACL SETUSER modifier '%X~1': Syntax error")
        d.close()


def test_channel_rules():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("ACL", "SETUSER", "s", "on", ">p", "+@all", "allkeys",
                     "&news.*", "&badge:1") == "OK"
        assert getuser(c, "s")["channels"] == b"&news.* &badge:1"
        d = login(srv, "s", "p")
        assert d.cmd("PUBLISH", "news.a", "x") == 0
        assert_err(d.cmd("PUBLISH", "other", "x"), NOPERM_CHAN)
        assert d.cmd("SUBSCRIBE", "badge:1") == [b"subscribe", b"badge:1", 1]
        d.close()
        d = login(srv, "s", "p")
        assert_err(d.cmd("SUBSCRIBE", "news.a", "badge:2"), NOPERM_CHAN)
        # a pattern must be one of the user's patterns, literally
        assert_err(d.cmd("PSUBSCRIBE", "news.a*"), NOPERM_CHAN)
        assert d.cmd("PSUBSCRIBE", "news.*") == [b"psubscribe", b"news.*", 1]
        d.close()
        # a new user has no channels (acl-pubsub-default resetchannels)
        assert c.cmd("ACL", "SETUSER", "n", "on", "nopass", "+@all") == "OK"
        assert getuser(c, "n")["channels"] == b""
        assert c.cmd("CONFIG", "SET", "acl-pubsub-default",
                     "allchannels") == "OK"
        assert c.cmd("ACL", "SETUSER", "m") == "OK"
        assert getuser(c, "m")["channels"] == b"&*"
        assert c.cmd("ACL", "SETUSER", "s", "resetchannels", "allchannels") \
            == "OK"
        assert getuser(c, "s")["channels"] == b"&*"
        assert_err(c.cmd("ACL", "SETUSER", "s", "&x"),
                   "ERR Error in ACL SETUSER modifier '&x': Adding a pattern "
                   "after the * pattern")


def test_reset_and_getuser_shape():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("ACL", "SETUSER", "r", "on", ">p", "+@all", "~*",
                     "&*", "reset") == "OK"
        assert c.cmd("ACL", "GETUSER", "r") == [
            b"flags", [b"off"], b"passwords", [], b"commands", b"-@all",
            b"keys", b"", b"channels", b"", b"selectors", []]
        assert c.cmd("ACL", "GETUSER", "nobody") is None
        assert c.cmd("HELLO", "3") is not None
        u = c.cmd("ACL", "GETUSER", "r")
        assert isinstance(u, dict) and u[b"flags"] == [b"off"], u
        # bad user names and arity
        assert c.cmd("HELLO", "2") is not None
        assert_err(c.cmd("ACL", "SETUSER", "a b"), "ERR Usernames can't")
        assert_err(c.cmd("ACL", "GETUSER"), "ERR wrong number of arguments "
                   "for 'acl|getuser' command")
        assert_err(c.cmd("ACL", "WHOAMI", "x"), "ERR wrong number")
        assert_err(c.cmd("ACL"), "ERR wrong number of arguments for 'ACL'")
        assert_err(c.cmd("ACL", "NOPE"), "ERR unknown subcommand 'NOPE'")
        assert_err(c.cmd("ACL", "DELUSER", "default"),
                   "ERR The 'default' user cannot be removed")
        assert c.cmd("ACL", "DELUSER", "r", "nobody") == 1
        assert c.cmd("ACL", "USERS") == [b"default"]
        assert len(c.cmd("ACL", "HELP")) > 10


def test_deleted_user_connections_are_closed():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("ACL", "SETUSER", "gone", "on", ">p", "+@all",
                     "~*") == "OK"
        d1 = login(srv, "gone", "p")
        d2 = login(srv, "gone", "p")
        b = srv.bin()
        assert b.call("AUTH", "gone", "p") == "OK"
        other = srv.resp()
        assert b"user=gone" in c.cmd("CLIENT", "LIST")
        assert c.cmd("ACL", "DELUSER", "gone") == 1
        for conn in (d1, d2, b):
            assert conn.wait_closed(5.0)
        assert other.cmd("PING") == "PONG"
        assert b"user=gone" not in c.cmd("CLIENT", "LIST")
        # a user deleting itself gets its reply, then the close
        assert c.cmd("ACL", "SETUSER", "self", "on", ">p", "+@all") == "OK"
        s = login(srv, "self", "p")
        assert s.cmd("ACL", "DELUSER", "self") == 1
        assert s.wait_closed(5.0)
        # CLIENT KILL USER
        assert c.cmd("ACL", "SETUSER", "kk", "on", ">p", "+@all") == "OK"
        k = login(srv, "kk", "p")
        assert c.cmd("CLIENT", "KILL", "USER", "kk") == 1
        assert k.wait_closed(5.0)
        assert c.cmd("CLIENT", "KILL", "USER", "nobody") == 0
        other.close()


def test_hello_and_binary_auth():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("ACL", "SETUSER", "h", "on", ">pw", "+@all", "~*") == \
            "OK"
        assert c.cmd("CONFIG", "SET", "requirepass", "dflt") == "OK"
        with srv.resp() as d:
            m = d.cmd("HELLO", "3", "AUTH", "h", "pw", "SETNAME", "n1")
            assert isinstance(m, dict) and m[b"proto"] == 3, m
            assert d.cmd("ACL", "WHOAMI") == b"h"
        with srv.resp() as d:
            assert_err(d.cmd("HELLO", "3", "AUTH", "h", "bad"), WRONGPASS)
            assert_err(d.cmd("CNT.GET", 1, 0), "NOAUTH")
        with srv.bin() as b:
            v = b.call("CNT.GET", 1, 0)
            assert is_err(v, code=E["NOAUTH"]), v
            v = b.call("AUTH", "h", "bad")
            assert is_err(v, code=E["WRONGPASS"]), v
            assert b.call("AUTH", "h", "pw") == "OK"
            assert b.call("ACL", "WHOAMI") == b"h"
            assert b.call("CNT.GET", 1, 0) == 0
        with srv.bin() as b:
            v = b.call("HELLO", 1, "AUTH", "h", "pw")
            assert not is_err(v), v
            assert b.call("ACL", "WHOAMI") == b"h"


def test_acl_log():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("ACL", "SETUSER", "l", "on", ">p", "+cnt.get",
                     "+multi", "+exec", "~1") == "OK"
        d = login(srv, "l", "p")
        assert_err(d.cmd("CNT.INCR", 1, 0), NOPERM_CMD % "cnt.incr")
        assert_err(d.cmd("CNT.INCR", 1, 0), NOPERM_CMD % "cnt.incr")
        assert_err(d.cmd("CNT.GET", 2, 0), NOPERM_KEY)
        with srv.resp() as e:
            assert_err(e.cmd("AUTH", "l", "wrong"), WRONGPASS)
        log = c.cmd("ACL", "LOG")
        assert len(log) == 3, log
        auth, key, cmd = [pairs(e) for e in log]
        assert set(cmd) == {"count", "reason", "context", "object",
                            "username", "age-seconds", "client-info",
                            "entry-id", "timestamp-created",
                            "timestamp-last-updated"}
        assert (cmd["count"], cmd["reason"], cmd["context"], cmd["object"],
                cmd["username"]) == (2, b"command", b"toplevel",
                                     b"cnt.incr", b"l")
        assert b"user=l" in cmd["client-info"]
        assert (key["reason"], key["object"]) == (b"key", b"2")
        assert (auth["reason"], auth["object"], auth["username"]) == \
            (b"auth", b"AUTH", b"l")
        assert float(cmd["age-seconds"]) < 60
        assert cmd["timestamp-created"] <= cmd["timestamp-last-updated"]
        assert len(c.cmd("ACL", "LOG", "1")) == 1
        assert_err(c.cmd("ACL", "LOG", "-1"), "ERR value is out of range")
        # in MULTI: refused at queue time, context multi, EXECABORT
        assert d.cmd("MULTI") == "OK"
        assert_err(d.cmd("CNT.INCR", 1, 0), NOPERM_CMD % "cnt.incr")
        assert_err(d.cmd("EXEC"), "EXECABORT")
        assert pairs(c.cmd("ACL", "LOG", "1")[0])["context"] == b"multi"
        # acllog-max-len
        assert c.cmd("CONFIG", "SET", "acllog-max-len", "2") == "OK"
        assert len(c.cmd("ACL", "LOG")) == 2
        assert c.cmd("ACL", "LOG", "RESET") == "OK"
        assert c.cmd("ACL", "LOG") == []
        d.close()


def test_redaction_in_monitor_and_slowlog():
    with Server(slowlog_log_slower_than=0) as srv, srv.resp() as c, \
            srv.resp() as m:
        assert m.cmd("MONITOR") == "OK"
        h = "a" * 64
        assert c.cmd("ACL", "SETUSER", "z", "on", ">secret1", "<secret1",
                     "#" + h, "!" + h, "+@all") == "OK"
        assert c.cmd("AUTH", "z", "nosecret") is not None
        lines = [m.read_reply() for _ in range(2)]
        text = " ".join(str(x) for x in lines)
        assert "secret1" not in text and h not in text, text
        assert "(redacted)" in text and '"+@all"' in text, text
        log = str(c.cmd("SLOWLOG", "GET", "10"))
        assert "secret1" not in log and h not in log and "nosecret" not in log
        assert "redacted" in log


def test_aclfile_load_save():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "users.acl")
        with open(path, "w") as f:
            f.write("# team\nuser dash on >d ~* resetchannels -@all +info "
                    "+ping\n\nuser svc on #%s ~1* +@cnt\n"
                    % hashlib.sha256(b"s").hexdigest())
        with Server(aclfile=path) as srv, srv.resp() as c:
            assert c.cmd("ACL", "USERS") == [b"dash", b"default", b"svc"]
            d = login(srv, "svc", "s")
            assert d.cmd("CNT.INCR", 1, 0) == [1, 1]
            dash = login(srv, "dash", "d")
            # a broken file is refused with its file and line; nothing
            # changes
            with open(path, "w") as f:
                f.write("user svc on >s +@all\nuser x on +nosuch\n")
            assert_err(c.cmd("ACL", "LOAD"),
                       "ERR %s:2: Error in applying operation '+nosuch': "
                       "Unknown command or category name in ACL" % path)
            with open(path, "w") as f:
                f.write("user a on\nusr b\n")
            assert_err(c.cmd("ACL", "LOAD"), "ERR %s:2: line should start "
                       "with user keyword" % path)
            with open(path, "w") as f:
                f.write("user a on\nuser a off\n")
            assert_err(c.cmd("ACL", "LOAD"),
                       "ERR %s:2: Duplicate user 'a' found" % path)
            with open(path, "w") as f:
                f.write('user a on "unclosed\n')
            assert_err(c.cmd("ACL", "LOAD"), "ERR %s:1: unbalanced" % path)
            assert c.cmd("ACL", "USERS") == [b"dash", b"default", b"svc"]
            assert d.cmd("CNT.INCR", 10, 0) == [1, 1]
            # a good file: svc keeps its connection with its new rights,
            # dash is gone and its connection closed
            with open(path, "w") as f:
                f.write("user svc on >s ~* +@read\n")
            assert c.cmd("ACL", "LOAD") == "OK"
            assert c.cmd("ACL", "USERS") == [b"default", b"svc"]
            assert dash.wait_closed(5.0)
            assert_err(d.cmd("CNT.INCR", 10, 0), NOPERM_CMD % "cnt.incr")
            assert d.cmd("CNT.GET", 10, 0) == 1
            # SAVE writes what LIST shows; LOAD reads it back the same
            assert c.cmd("ACL", "SETUSER", "new", "on", ">n", "%R~9*",
                         "&ch", "+@read", "-cnt.get", "+config|get") == "OK"
            listed = c.cmd("ACL", "LIST")
            assert c.cmd("ACL", "SAVE") == "OK"
            with open(path) as f:
                saved = f.read()
            assert saved == "".join(x.decode() + "\n" for x in listed)
            assert "n" not in saved.split("new on ")[1].split(" ")[0]
            assert c.cmd("ACL", "LOAD") == "OK"
            assert c.cmd("ACL", "LIST") == listed
            d.close()
        # no aclfile: SAVE and LOAD say so
        with Server() as srv, srv.resp() as c:
            assert_err(c.cmd("ACL", "SAVE"), "ERR This server is not "
                       "configured to use an ACL file")
            assert_err(c.cmd("ACL", "LOAD"), "ERR This server is not "
                       "configured to use an ACL file")
            # aclfile is a protected config
            assert_err(c.cmd("CONFIG", "SET", "aclfile", path),
                       "ERR CONFIG SET failed (possibly related to argument "
                       "'aclfile') - can't set protected config")
            assert_err(c.cmd("CONFIG", "SET", "cluster-config-file", "x"),
                       "ERR CONFIG SET failed (possibly related to argument "
                       "'cluster-config-file') - can't set protected config")
        # a broken aclfile at start: the server refuses to start
        with open(path, "w") as f:
            f.write("user ok on\nuser bad on >x +nosuch\n")
        try:
            with Server(aclfile=path):
                raise AssertionError("started with a broken aclfile")
        except ServerExited as e:
            assert "%s:2" % path in str(e), str(e)


def test_user_lines_in_config_file():
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "unreadd.conf")
        with open(conf, "w") as f:
            f.write("maxmemory 0\nuser push on >pp ~* &badge:* -@all "
                    "+subscribe +psubscribe +ping\n"
                    "user default on >dd ~* &* +@all\n")
        with Server(config_file=conf) as srv, srv.resp() as c:
            assert_err(c.cmd("CNT.GET", 1, 0), "NOAUTH")
            assert c.cmd("AUTH", "dd") == "OK"
            assert c.cmd("ACL", "USERS") == [b"default", b"push"]
            p = login(srv, "push", "pp")
            assert p.cmd("SUBSCRIBE", "badge:1") == [b"subscribe", b"badge:1",
                                                     1]
            p.close()
            # CONFIG REWRITE writes the users back as user lines
            assert c.cmd("ACL", "SETUSER", "later", "on", ">l", "+ping") == \
                "OK"
            assert c.cmd("CONFIG", "REWRITE") == "OK"
        with open(conf) as f:
            text = f.read()
        assert text.count("user later on #") == 1, text
        assert text.count("user push on #") == 1, text
        with Server(config_file=conf) as srv, srv.resp() as c:
            assert c.cmd("AUTH", "later", "l") == "OK"
        # a broken user line names its file and line
        with open(conf, "w") as f:
            f.write("maxmemory 0\nuser x on +nosuch\n")
        try:
            with Server(config_file=conf):
                raise AssertionError("started with a broken user line")
        except ServerExited as e:
            assert "%s:2" % conf in str(e) and "+nosuch" in str(e), str(e)
        # user lines and an aclfile together are refused, as Redis
        acl = os.path.join(tmp, "users.acl")
        open(acl, "w").close()
        with open(conf, "w") as f:
            f.write("user x on\naclfile %s\n" % acl)
        try:
            with Server(config_file=conf):
                raise AssertionError("started with user lines and aclfile")
        except ServerExited as e:
            assert "aclfile" in str(e), str(e)


def test_categories():
    with Server() as srv, srv.resp() as c:
        cats = c.cmd("ACL", "CAT")
        for want in (b"read", b"write", b"admin", b"dangerous", b"pubsub",
                     b"connection", b"fast", b"slow", b"keyspace", b"cnt",
                     b"conv", b"grp", b"bc", b"dot", b"feed", b"rcpt",
                     b"user"):
            assert want in cats, want
        assert b"cnt.incr" in c.cmd("ACL", "CAT", "cnt")
        assert b"conv.get" not in c.cmd("ACL", "CAT", "cnt")
        dangerous = c.cmd("ACL", "CAT", "dangerous")
        for want in (b"flushall", b"config", b"debug", b"shutdown", b"acl",
                     b"monitor"):
            assert want in dangerous, want
        assert b"subscribe" in c.cmd("ACL", "CAT", "pubsub")
        assert b"subscribe" not in c.cmd("ACL", "CAT", "admin")
        assert b"ping" in c.cmd("ACL", "CAT", "connection")
        assert c.cmd("ACL", "CAT", "string") == []
        assert_err(c.cmd("ACL", "CAT", "nope"), "ERR Unknown category 'nope'")
        # COMMAND INFO shows the same categories
        info = c.cmd("COMMAND", "INFO", "cnt.incr")[0]
        assert set(info[6]) == {"@write", "@fast", "@cnt"}, info[6]


def test_dryrun_and_genpass():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("ACL", "SETUSER", "dr", "on", "+cnt.get", "~5") == "OK"
        assert c.cmd("ACL", "DRYRUN", "dr", "CNT.GET", 5, 0) == "OK"
        assert c.cmd("ACL", "DRYRUN", "dr", "CNT.GET", 6, 0) == \
            b"This user has no permissions to access the '6' key"
        assert c.cmd("ACL", "DRYRUN", "dr", "CNT.INCR", 5, 0) == \
            b"This user has no permissions to run the 'cnt.incr' command"
        assert_err(c.cmd("ACL", "DRYRUN", "nobody", "PING"),
                   "ERR User 'nobody' not found")
        assert_err(c.cmd("ACL", "DRYRUN", "dr", "NOPE"),
                   "ERR Command 'NOPE' not found")
        assert_err(c.cmd("ACL", "DRYRUN", "dr", "CNT.GET"), "ERR wrong number")
        p = c.cmd("ACL", "GENPASS")
        assert len(p) == 64 and int(p, 16) >= 0
        assert p != c.cmd("ACL", "GENPASS")
        assert len(c.cmd("ACL", "GENPASS", "5")) == 2
        assert len(c.cmd("ACL", "GENPASS", "4096")) == 1024
        for bad in ("0", "4097", "x", "-1"):
            assert_err(c.cmd("ACL", "GENPASS", bad),
                       "ERR ACL GENPASS argument must be the number of bits")


def test_batch_frame_refused_whole():
    with Server() as srv, srv.resp() as c, srv.bin() as b:
        assert c.cmd("ACL", "SETUSER", "bt", "on", ">p", "+@cnt",
                     "-cnt.set", "~*") == "OK"
        assert b.call("AUTH", "bt", "p") == "OK"
        # one refused sub-request refuses the batch: nothing ran
        v = batch(b, [("CNT.INCR", 1, 0, 1), ("CNT.SET", 1, 0, 9)])
        assert is_err(v, code=E["NOPERM"]) and \
            v.text == (NOPERM_CMD % "cnt.set")[7:], v
        assert b.call("CNT.GET", 1, 0) == 0
        assert batch(b, [("CNT.INCR", 1, 0, 1), ("CNT.GET", 1, 0)]) == \
            [[1, 1], 1]


def test_redis_cli_and_redis_py():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("ACL", "SETUSER", "cli", "on", ">pw", "+@read",
                     "+ping", "+acl|whoami", "~*") == "OK"
        out = subprocess.run(
            ["redis-cli", "-p", str(srv.port), "--user", "cli", "--pass",
             "pw", "--no-auth-warning", "CNT.INCR", "1", "0"],
            capture_output=True, text=True, timeout=20)
        assert "NOPERM this user has no permissions to run the 'cnt.incr' " \
               "command" in out.stdout + out.stderr, out
        out = subprocess.run(
            ["redis-cli", "-p", str(srv.port), "--user", "cli", "--pass",
             "pw", "--no-auth-warning", "ACL", "WHOAMI"],
            capture_output=True, text=True, timeout=20)
        assert out.stdout.strip() == "cli", out
        prog = textwrap.dedent("""
            import sys, redis
            port = int(sys.argv[1])
            admin = redis.Redis(port=port)
            assert admin.acl_setuser("py", enabled=True, passwords=["+pw"],
                                     commands=["+@all", "-@dangerous"],
                                     keys=["1*"], reset=True)
            u = admin.acl_getuser("py")
            assert "on" in u["flags"], u
            assert "~1*" in u["keys"] or u["keys"] == ["1*"] or \\
                u["keys"] == "~1*", u
            r = redis.Redis(port=port, username="py", password="pw")
            assert r.execute_command("CNT.INCR", 1, 0) == [1, 1]
            try:
                r.execute_command("CNT.INCR", 2, 0)
                raise SystemExit("key pattern not applied")
            except redis.exceptions.NoPermissionError as e:
                assert "keys used as arguments" in str(e), e
            try:
                r.flushall()
                raise SystemExit("flushall ran")
            except redis.exceptions.NoPermissionError:
                pass
            assert r.acl_whoami() == "py"
            log = admin.acl_log()
            assert log[0]["username"] == "py", log
            assert admin.acl_deluser("py") == 1
            assert "py" not in admin.acl_users()
            print("ok")
        """)
        out = subprocess.run([DEBIAN_PY, "-c", prog, str(srv.port)],
                             capture_output=True, text=True, timeout=60)
        assert out.stdout.strip().endswith("ok"), out


LIB_CLIENT = r'''
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
port = int(sys.argv[2])
P, U32 = ctypes.c_void_p, ctypes.c_uint32
lib.unread_connect.restype = P
lib.unread_connect.argtypes = [ctypes.c_char_p, ctypes.c_uint16,
                               ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
lib.unread_connect_cluster.restype = P
lib.unread_connect_cluster.argtypes = [ctypes.c_char_p, P,
                                       ctypes.c_char_p, ctypes.c_size_t]
lib.unread_opts_new.restype = P
lib.unread_opts_free.argtypes = [P]
lib.unread_opts_set_password.argtypes = [P, ctypes.c_char_p]
lib.unread_opts_set_user.argtypes = [P, ctypes.c_char_p]
lib.unread_auth_user.argtypes = [P, ctypes.c_char_p, ctypes.c_char_p]
lib.unread_errstr.restype = ctypes.c_char_p
lib.unread_errstr.argtypes = [P]
lib.unread_cnt_get.argtypes = [P, ctypes.c_uint64, ctypes.c_uint,
                               ctypes.POINTER(U32)]
lib.unread_close.argtypes = [P]
NOAUTH, WRONGPASS, NOPERM = 5, 12, 22
err = ctypes.create_string_buffer(512)
v = U32()
srv = b"127.0.0.1:%d" % port
# opts: user and password, sent on every connect
o = lib.unread_opts_new()
assert lib.unread_opts_set_user(o, b"reader") == 0
assert lib.unread_opts_set_password(o, b"rpw") == 0
c = lib.unread_connect_cluster(srv, o, err, 512)
assert c, err.value
assert lib.unread_cnt_get(c, 1, 0, ctypes.byref(v)) == 0
assert lib.unread_cnt_get(c, 2, 0, ctypes.byref(v)) == NOPERM
assert b"NOPERM" in lib.unread_errstr(c) and b"keys" in lib.unread_errstr(c)
lib.unread_close(c)
# the default user's password is not the user's
assert lib.unread_opts_set_user(o, None) == 0
assert not lib.unread_connect_cluster(srv, o, err, 512)
assert b"AUTH refused: WRONGPASS" in err.value, err.value
lib.unread_opts_free(o)
# unread_auth_user on an open handle
c = lib.unread_connect(b"127.0.0.1", port, 2000, err, 512)
assert c, err.value
assert lib.unread_cnt_get(c, 1, 0, ctypes.byref(v)) == NOAUTH
assert lib.unread_auth_user(c, b"reader", b"bad") == WRONGPASS
assert lib.unread_auth_user(c, b"reader", b"rpw") == 0
assert lib.unread_cnt_get(c, 1, 0, ctypes.byref(v)) == 0
lib.unread_close(c)
print("ok")
'''


def test_libunread_and_unread_cli_user():
    import sys
    from harness import BUILD, LIBUNREAD, libunread_env
    with Server(requirepass="dpw") as srv, srv.resp() as c:
        assert c.cmd("AUTH", "dpw") == "OK"
        assert c.cmd("ACL", "SETUSER", "reader", "on", ">rpw", "~1",
                     "-@all", "+@read") == "OK"
        p = subprocess.run([sys.executable, "-c", LIB_CLIENT, LIBUNREAD,
                            str(srv.port)], capture_output=True, text=True,
                           env=libunread_env(), timeout=60)
        assert p.returncode == 0 and p.stdout.strip() == "ok", \
            p.stdout + p.stderr
        cli = os.path.join(BUILD, "unread-cli")
        out = subprocess.run([cli, "-p", str(srv.port), "--user", "reader",
                              "-a", "rpw", "CNT.GET", "1", "0"],
                             capture_output=True, text=True, timeout=20)
        assert out.returncode == 0 and out.stdout.strip() == "0", out
        out = subprocess.run([cli, "-p", str(srv.port), "--user", "reader",
                              "-a", "rpw", "CNT.INCR", "1", "0"],
                             capture_output=True, text=True, timeout=20)
        assert out.returncode != 0 and "NOPERM" in out.stdout + out.stderr, \
            out
        out = subprocess.run([cli, "-p", str(srv.port), "--user", "reader",
                              "-a", "nope", "PING"],
                             capture_output=True, text=True, timeout=20)
        assert out.returncode != 0 and "WRONGPASS" in out.stdout + out.stderr


def test_documented_users_apply():
    """The least-privilege users and the sentinel rules of
    docs/OPERATIONS.md ("ACL users") are accepted as written, and do what
    they say."""
    from harness import REPO
    text = open(os.path.join(REPO, "docs", "OPERATIONS.md")).read()
    sec = text.split("### ACL users", 1)[1].split("\n### ", 1)[0]
    lines = [ln for ln in sec.split("```")[1].splitlines()
             if ln.startswith("user ")]
    assert len(lines) == 4, lines
    sentinel = sec.split("sentinel rules, ", 1)[1].split("`.", 1)[0]
    sentinel = sentinel.replace("`", "").replace("\n", " ").split()
    with Server() as srv, srv.resp() as c:
        for ln in lines:
            w = ln.split()
            if w[1] == "default":
                continue
            assert c.cmd("ACL", "SETUSER", *w[1:]) == "OK", ln
        assert c.cmd("ACL", "SETUSER", "sentinel", "on", ">s",
                     *sentinel) == "OK"
        dash = login(srv, "dashboard", "dash-secret")
        assert isinstance(dash.cmd("INFO"), bytes)
        assert isinstance(dash.cmd("CLIENT", "LIST"), bytes)
        assert_err(dash.cmd("CNT.GET", 1, 0), NOPERM_CMD % "cnt.get")
        assert_err(dash.cmd("CONFIG", "SET", "maxmemory", "1"),
                   NOPERM_CMD % "config|set")
        gw = login(srv, "gateway", "gw-secret")
        assert_err(gw.cmd("CNT.SET", 1, 0, 1), NOPERM_CMD % "cnt.set")
        assert_err(gw.cmd("SUBSCRIBE", "news"), NOPERM_CHAN)
        assert gw.cmd("SUBSCRIBE", "badge:1") == [b"subscribe", b"badge:1", 1]
        svc = login(srv, "msgsvc", "svc-secret")
        assert svc.cmd("CNT.INCR", 1, 0) == [1, 1]
        assert_err(svc.cmd("FLUSHALL"), NOPERM_CMD % "flushall")
        assert_err(svc.cmd("CNT.CLEAR", 1), NOPERM_CMD % "cnt.clear")
        for x in (dash, gw, svc):
            x.close()


def test_replica_masteruser_and_sentinel_auth_user():
    """A replica logs in to its primary as an ACL user (masteruser,
    masterauth), and redis-sentinel as another (sentinel auth-user,
    auth-pass) with the rules docs/OPERATIONS.md gives it."""
    import shutil
    from harness import REPO, free_port, info_flat
    from sentinel_rig import wait_until
    if shutil.which("redis-sentinel") is None:
        print("skip: no redis-sentinel")
        return
    text = open(os.path.join(REPO, "docs", "OPERATIONS.md")).read()
    rules = text.split("sentinel rules, ", 1)[1].split("`.", 1)[0]
    rules = " ".join(rules.replace("`", "").split())
    users = ["--user", "repl on >rp -@all +psync +replconf +ping",
             "--user", "sent on >sp " + rules]
    # the primary's default user has a password: the replica and the
    # sentinel get in only as their users
    with Server(args=users + ["--requirepass", "dpw"]) as primary, \
            Server(args=users + ["--masteruser", "repl", "--masterauth",
                                 "rp", "--replicaof",
                                 "127.0.0.1 %d" % primary.port]) as replica:
        def ask(srv, *cmd):
            with srv.resp() as c:
                if srv is primary:
                    assert c.cmd("AUTH", "dpw") == "OK"
                return c.cmd(*cmd)
        wait_until(lambda: info_flat(ask(replica, "INFO", "replication"))
                   .get("master_link_status") == "up", 20, "the replica's link")
        assert ask(primary, "CNT.INCR", 5, 0) == [1, 1]
        wait_until(lambda: ask(replica, "CNT.GET", 5, 0) == 1, 10,
                   "the write on the replica")
        tmp = tempfile.mkdtemp(prefix="acl-sentinel-")
        port = free_port()
        conf = os.path.join(tmp, "sentinel.conf")
        with open(conf, "w") as f:
            f.write("port %d\nbind 127.0.0.1\ndir %s\n"
                    "sentinel monitor m 127.0.0.1 %d 1\n"
                    "sentinel auth-user m sent\nsentinel auth-pass m sp\n"
                    "sentinel down-after-milliseconds m 2000\n"
                    % (port, tmp, primary.port))
        log = open(os.path.join(tmp, "log"), "ab")
        p = subprocess.Popen(["redis-sentinel", conf], stdout=log,
                             stderr=subprocess.STDOUT, cwd=tmp)
        try:
            def healthy():
                with Resp(port, 5.0) as s:
                    r = s.cmd("SENTINEL", "MASTER", "m")
                m = {r[i].decode(): r[i + 1].decode()
                     for i in range(0, len(r), 2)}
                return m["flags"] == "master" and m["num-slaves"] == "1"
            wait_until(healthy, 30, "sentinel to see the master and replica")
            with primary.resp() as c:
                assert c.cmd("AUTH", "dpw") == "OK"
                assert b"user=sent" in c.cmd("CLIENT", "LIST")
                # nothing sentinel sent was refused
                denied = [pairs(e) for e in c.cmd("ACL", "LOG")]
                assert not [e for e in denied
                            if e["username"] == b"sent"], denied
        finally:
            p.terminate()
            p.wait(10)
            log.close()
            shutil.rmtree(tmp, ignore_errors=True)


def test_protected_mode_follows_the_default_user():
    """Protected mode refuses other hosts while a connection would be the
    default user with no password; an ACL password (or the default user
    off) lets them in, with their user's password."""
    from test_security import exchange, local_address
    addr = local_address()
    if addr is None:
        print("skip: no address but loopback on this machine")
        return
    with Server(bind="0.0.0.0") as srv, srv.resp() as c:
        assert exchange(addr, srv.port, b"PING\r\n").startswith(b"-DENIED ")
        assert c.cmd("ACL", "SETUSER", "app", "on", ">apw", "~*",
                     "+@all") == "OK"
        # another user does not make the default user safe
        assert exchange(addr, srv.port, b"PING\r\n").startswith(b"-DENIED ")
        assert c.cmd("ACL", "SETUSER", "default", "off") == "OK"
        out = exchange(addr, srv.port,
                       b"CNT.GET 1 0\r\nAUTH app apw\r\nCNT.GET 1 0\r\nQUIT\r\n")
        assert out.startswith(b"-NOAUTH") and b"+OK\r\n:0\r\n" in out, out
        assert c.cmd("ACL", "SETUSER", "default", "on", ">dpw") == "OK"
        out = exchange(addr, srv.port, b"AUTH dpw\r\nPING\r\nQUIT\r\n")
        assert out.startswith(b"+OK\r\n+PONG"), out
        assert c.cmd("ACL", "SETUSER", "default", "nopass") == "OK"
        assert exchange(addr, srv.port, b"PING\r\n").startswith(b"-DENIED ")


def test_channels_taken_away_close_subscribers():
    """ACL SETUSER or ACL LOAD taking a channel pattern away from a user
    closes that user's connections subscribed to a channel (SUBSCRIBE) or
    pattern (PSUBSCRIBE) no longer allowed, as Redis 7's
    ACLKillPubsubClientsIfNeeded; its other connections, and other users'
    subscribers, stay."""
    with Server() as srv, srv.resp() as c:
        assert c.cmd("ACL", "SETUSER", "s", "on", ">p", "+@all", "allkeys",
                     "&news.*", "&badge:*", "&alerts") == "OK"
        assert c.cmd("ACL", "SETUSER", "t", "on", ">p", "+@all", "allkeys",
                     "&news.*") == "OK"
        news = login(srv, "s", "p")
        assert news.cmd("SUBSCRIBE", "news.a") == [b"subscribe", b"news.a", 1]
        pat = login(srv, "s", "p")
        assert pat.cmd("PSUBSCRIBE", "badge:*") == [b"psubscribe",
                                                    b"badge:*", 1]
        alerts = login(srv, "s", "p")
        assert alerts.cmd("SUBSCRIBE", "alerts") == [b"subscribe",
                                                     b"alerts", 1]
        idle = login(srv, "s", "p")  # no subscription: stays
        other = login(srv, "t", "p")
        assert other.cmd("SUBSCRIBE", "news.a") == [b"subscribe",
                                                    b"news.a", 1]
        # a channel added takes nothing away
        assert c.cmd("ACL", "SETUSER", "s", "&more") == "OK"
        assert news.cmd("PING") == [b"pong", b""]
        # badge:* goes: the PSUBSCRIBE badge:* connection closes (a
        # pattern must stay literally), the others stay
        assert c.cmd("ACL", "SETUSER", "s", "resetchannels", "&news.*",
                     "&alerts", "&badge:1") == "OK"
        assert pat.wait_closed(5.0)
        for conn in (news, alerts, other):
            assert conn.cmd("PING") == [b"pong", b""]
        assert idle.cmd("PING") == "PONG"
        assert c.cmd("PUBLISH", "news.a", "m") == 2
        for conn in (news, alerts, idle, other):
            conn.close()
    # ACL LOAD without alerts closes the alerts subscriber only
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "users.acl")
        with open(path, "w") as f:
            f.write("user s on >p ~* &news.* &alerts +@all\n")
        with Server(aclfile=path) as srv, srv.resp() as c:
            news = login(srv, "s", "p")
            assert news.cmd("SUBSCRIBE", "news.a") == [b"subscribe",
                                                       b"news.a", 1]
            alerts = login(srv, "s", "p")
            assert alerts.cmd("PSUBSCRIBE", "news.*") == [b"psubscribe",
                                                          b"news.*", 1]
            assert alerts.cmd("SUBSCRIBE", "alerts") == [b"subscribe",
                                                         b"alerts", 2]
            with open(path, "w") as f:
                f.write("user s on >p ~* &news.* +@all\n")
            assert c.cmd("ACL", "LOAD") == "OK"
            assert alerts.wait_closed(5.0)
            assert news.cmd("PING") == [b"pong", b""]
            # allchannels keeps everyone
            assert c.cmd("ACL", "SETUSER", "s", "allchannels") == "OK"
            assert news.cmd("PING") == [b"pong", b""]
            # a RESP3 subscriber taking its own channel away gets its
            # reply, then the close
            me = srv.resp()
            assert isinstance(me.cmd("HELLO", 3, "AUTH", "s", "p"), dict)
            me.send(encode_multibulk("SUBSCRIBE", "news.b"))
            assert me.read_reply() == Push([b"subscribe", b"news.b", 1])
            assert me.cmd("ACL", "SETUSER", "s", "resetchannels",
                          "&alerts") == "OK"
            assert me.wait_closed(5.0)
            assert news.wait_closed(5.0)


def test_info_acl_access_denied_counters():
    """INFO stats has Redis's acl_access_denied_auth / _cmd / _key /
    _channel, counted where ACL LOG records the refusal (also with
    acllog-max-len 0), and the metrics port the same counts as
    unreadd_acl_access_denied_total{reason=...}; CONFIG RESETSTAT zeroes
    them."""
    from harness import info_dict
    from harness import free_port
    from test_ops import scrape
    names = ("auth", "cmd", "key", "channel")
    mport = free_port()

    def counts(c):
        st = info_dict(c.cmd("INFO", "stats"))["stats"]
        got = tuple(int(st["acl_access_denied_" + n]) for n in names)
        m = scrape(mport)
        assert got == tuple(
            int(m['unreadd_acl_access_denied_total{reason="%s"}' % n])
            for n in names), (got, m)
        return got

    with Server(metrics_port=mport) as srv, srv.resp() as c:
        assert counts(c) == (0, 0, 0, 0)
        assert c.cmd("ACL", "SETUSER", "u", "on", ">p", "+cnt.get",
                     "+publish", "~1", "&ok") == "OK"
        d = login(srv, "u", "p")
        assert_err(d.cmd("CNT.INCR", 1, 0), NOPERM_CMD % "cnt.incr")
        assert_err(d.cmd("CNT.INCR", 1, 0), NOPERM_CMD % "cnt.incr")
        assert_err(d.cmd("CNT.GET", 2, 0), NOPERM_KEY)
        assert_err(d.cmd("PUBLISH", "no", "x"), NOPERM_CHAN)
        with srv.resp() as e:
            assert_err(e.cmd("AUTH", "u", "wrong"), WRONGPASS)
            assert_err(e.cmd("AUTH", "nobody", "x"), WRONGPASS)
        assert counts(c) == (2, 2, 1, 1)
        # counted even when the log keeps nothing, as Redis
        assert c.cmd("CONFIG", "SET", "acllog-max-len", "0") == "OK"
        assert_err(d.cmd("CNT.GET", 3, 0), NOPERM_KEY)
        assert counts(c) == (2, 2, 2, 1)
        assert c.cmd("CONFIG", "RESETSTAT") == "OK"
        assert counts(c) == (0, 0, 0, 0)
        d.close()


def test_relative_aclfile_is_under_dir():
    """A relative aclfile is dir's, as Redis (which chdir()s to dir) reads
    it: at start, ACL LOAD and ACL SAVE use dir/aclfile, whatever the
    server's working directory."""
    # the harness starts the server in its temp dir with --dir TMP/data;
    # the later --dir given here wins: the working directory is not dir
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "d")
        os.makedirs(data)
        with open(os.path.join(data, "users.acl"), "w") as f:
            f.write("user a on >p ~* +@all\n")
        with Server(aclfile="users.acl", args=["--dir", data]) as srv, \
                srv.resp() as c:
            assert c.cmd("ACL", "USERS") == [b"a", b"default"]
            assert c.cmd("CONFIG", "GET", "aclfile") == [b"aclfile",
                                                         b"users.acl"]
            assert c.cmd("ACL", "SETUSER", "b", "on", ">q") == "OK"
            assert c.cmd("ACL", "SAVE") == "OK"
            with open(os.path.join(data, "users.acl")) as f:
                assert "user b on" in f.read()
            assert not os.path.exists(os.path.join(srv.tmp.name,
                                                   "users.acl"))
            with open(os.path.join(data, "users.acl"), "w") as f:
                f.write("user z on >p ~* +@all\n")
            assert c.cmd("ACL", "LOAD") == "OK"
            assert c.cmd("ACL", "USERS") == [b"default", b"z"]
            # an error names the path read
            with open(os.path.join(data, "users.acl"), "w") as f:
                f.write("usr z\n")
            assert_err(c.cmd("ACL", "LOAD"), "ERR %s:1: line should start "
                       "with user keyword"
                       % os.path.join(data, "users.acl"))


def test_replica_link_shows_masteruser():
    """The primary's CLIENT LIST shows the replica's link as the user it
    logged in with (masteruser), not default; ACL DELUSER of that user
    closes the link, as Redis closes a deleted user's connections."""
    from harness import info_flat
    from sentinel_rig import wait_until
    users = ["--user", "repl on >rp -@all +psync +replconf +ping"]
    with Server(args=users + ["--requirepass", "dpw"]) as primary, \
            Server(args=["--masteruser", "repl", "--masterauth", "rp",
                         "--replicaof", "127.0.0.1 %d" % primary.port]) \
            as replica, primary.resp() as c:
        assert c.cmd("AUTH", "dpw") == "OK"
        with replica.resp() as r:
            wait_until(lambda: info_flat(r.cmd("INFO", "replication"))
                       .get("master_link_status") == "up", 20,
                       "the replica's link")
        lines = c.cmd("CLIENT", "LIST").decode().splitlines()
        link = [ln for ln in lines if "flags=S" in ln]
        assert len(link) == 1 and " user=repl " in link[0], lines
        assert c.cmd("ACL", "DELUSER", "repl") == 1
        wait_until(lambda: not [ln for ln in c.cmd("CLIENT", "LIST")
                                .decode().splitlines() if "flags=S" in ln],
                   10, "the link closed")
