"""Test certificates made at test time with the openssl command (as Redis's
utils/gen-test-certs.sh does): nothing secret is committed. Not a test
file.

certs(dir) -> Certs with paths:
  ca, ca_key          the test CA
  server, server_key  CN localhost, SAN 127.0.0.1 and localhost, by ca
  client, client_key  a client certificate by ca
  other_ca            another CA; other_server/other_server_key by it
  expired, expired_key  by ca, valid only in 2020
  enc_key             server_key encrypted with the passphrase "s3cret"
Made once per directory (cached beside the files).
"""

import os
import subprocess

PASS = "s3cret"


def _run(*args, cwd):
    p = subprocess.run(["openssl"] + list(args), cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, "openssl %s: %s" % (" ".join(args), p.stderr)


class Certs:
    def __init__(self, d):
        self.dir = d
        for name in ("ca", "server", "client", "other_ca", "other_server",
                     "expired"):
            setattr(self, name, os.path.join(d, name + ".crt"))
            setattr(self, name + "_key", os.path.join(d, name + ".key"))
        self.enc_key = os.path.join(d, "server-enc.key")


def _ca(d, name, cn):
    _run("req", "-x509", "-new", "-newkey", "rsa:2048", "-nodes",
         "-sha256", "-days", "3650", "-subj", "/O=unreadd test/CN=" + cn,
         "-keyout", name + ".key", "-out", name + ".crt", cwd=d)


def _leaf(d, name, ca, cn, ext, days="3650", dates=None):
    _run("req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj",
         "/O=unreadd test/CN=" + cn, "-keyout", name + ".key",
         "-out", name + ".csr", cwd=d)
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write(ext)
    if dates is None:
        _run("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt",
             "-CAkey", ca + ".key", "-CAcreateserial", "-days", days,
             "-sha256", "-extfile", name + ".ext", "-out", name + ".crt",
             cwd=d)
        return
    # a certificate valid only between two dates in the past: `openssl
    # ca` takes explicit dates (x509 -req does not, in OpenSSL 3.0)
    db = os.path.join(d, "ca-db")
    os.makedirs(os.path.join(db, "new"), exist_ok=True)
    open(os.path.join(db, "index.txt"), "a").close()
    with open(os.path.join(db, "serial"), "w") as f:
        f.write("1000\n")
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write("[ca]\ndefault_ca = test\n[test]\ndir = %s\n"
                "database = $dir/index.txt\nnew_certs_dir = $dir/new\n"
                "serial = $dir/serial\ndefault_md = sha256\n"
                "policy = any\nunique_subject = no\n"
                "[any]\ncommonName = supplied\norganizationName = optional\n"
                % db)
    _run("ca", "-batch", "-config", "ca.cnf", "-in", name + ".csr",
         "-cert", ca + ".crt", "-keyfile", ca + ".key", "-startdate",
         dates[0], "-enddate", dates[1], "-extfile", name + ".ext",
         "-out", name + ".crt", "-notext", cwd=d)


SERVER_EXT = ("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,"
              "keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n"
              "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
CLIENT_EXT = ("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,"
              "keyEncipherment\nextendedKeyUsage=clientAuth\n")


def certs(d):
    os.makedirs(d, exist_ok=True)
    c = Certs(d)
    if os.path.exists(os.path.join(d, "done")):
        return c
    _ca(d, "ca", "unreadd test CA")
    _ca(d, "other_ca", "another CA")
    _leaf(d, "server", "ca", "localhost", SERVER_EXT)
    _leaf(d, "client", "ca", "a client", CLIENT_EXT)
    _leaf(d, "other_server", "other_ca", "localhost", SERVER_EXT)
    _leaf(d, "expired", "ca", "localhost", SERVER_EXT,
          dates=("20200101000000Z", "20200102000000Z"))
    _run("pkey", "-in", "server.key", "-aes256", "-passout", "pass:" + PASS,
         "-out", "server-enc.key", cwd=d)
    open(os.path.join(d, "done"), "w").close()
    return c
