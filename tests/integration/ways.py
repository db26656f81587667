"""The three ways into the server, for family tests that check each
behaviour once per way: RESP multibulk, an inline line, and the binary
protocol.

    @each_way
    def test_x(via):            defines test_x_resp, test_x_inline and
        via("DOT.PUSH", 5, 100)   test_x_binary, each on a fresh Server()

Arguments are given as text would give them: the binary way sends Python
ints and canonical decimal strings below 2**64 as u64 integer arguments and
anything else ("x", "-1", 2**64) as a string, which the server must refuse
as it refuses the same text.
"""

from harness import E, Server, assert_err


class Via:
    def __init__(self, srv, kind):
        self.kind = kind
        self.c = srv.bin() if kind == "binary" else srv.resp()

    @staticmethod
    def _bin_arg(a):
        if isinstance(a, int) and 0 <= a < 1 << 64:
            return a
        if isinstance(a, str) and a.isdigit() and int(a) < 1 << 64 and \
                str(int(a)) == a:
            return int(a)
        return str(a)

    def __call__(self, name, *args):
        if self.kind == "resp":
            return self.c.cmd(name, *args)
        if self.kind == "inline":
            return self.c.inline(" ".join(str(a) for a in (name,) + args))
        return self.c.call(name, *[self._bin_arg(a) for a in args])

    def bad(self, reply, text_prefix="ERR", code=E["BADARG"]):
        """reply is an error: code in binary, text_prefix in text."""
        if self.kind == "binary":
            assert_err(reply, None, code)
        else:
            assert_err(reply, text_prefix)

    def close(self):
        self.c.close()


def each_way(fn=None, **server_config):
    """Defines fn_resp, fn_inline and fn_binary from fn(via), each run
    against a fresh Server(**server_config)."""
    def define(f):
        g = f.__globals__
        for kind in ("resp", "inline", "binary"):
            def test(kind=kind):
                with Server(**server_config) as srv:
                    via = Via(srv, kind)
                    try:
                        f(via)
                    finally:
                        via.close()
            test.__name__ = "%s_%s" % (f.__name__, kind)
            test.__qualname__ = test.__name__
            test.__module__ = f.__module__
            test.order_line = f.__code__.co_firstlineno
            g[test.__name__] = test
        return None
    return define(fn) if fn is not None else define


# --------------------------------------------------------------------------
# The fourth way: libunread itself, through ctypes.

def libunread(signatures):
    """BUILD/libunread.so loaded with ctypes, with the connection calls and
    the given {name: (restype, [argtypes])} declared; None when the library
    cannot be loaded into this process (a sanitizer build, whose runtime
    must come first)."""
    import ctypes
    import os
    from harness import BUILD

    path = os.path.join(BUILD, "libunread.so")
    assert os.path.exists(path), "%s not built (run make)" % path
    # Loading an ASan-linked library into Python does not fail politely:
    # the runtime ends the process. Its name in the library's dynamic
    # section tells beforehand.
    with open(path, "rb") as f:
        if b"libasan.so" in f.read():
            return None
    lib = ctypes.CDLL(path)
    base = {
        "unread_connect": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_uint16,
                                             ctypes.c_int, ctypes.c_char_p,
                                             ctypes.c_size_t]),
        "unread_close": (None, [ctypes.c_void_p]),
        "unread_errstr": (ctypes.c_char_p, [ctypes.c_void_p]),
        "unread_ping": (ctypes.c_int, [ctypes.c_void_p]),
    }
    base.update(signatures)
    for name, (res, args) in base.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


def lib_connect(lib, srv):
    h = lib.unread_connect(b"127.0.0.1", srv.port, 5000, None, 0)
    assert h, "unread_connect failed"
    return h
