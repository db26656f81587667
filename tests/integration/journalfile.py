"""The journal segment format (docs/PERSISTENCE.md 3.1), read here
independently of persistence/journal.c, for tests that damage journal files
on purpose: header fields, record boundaries, and the damage itself.

Version 2 header (48 bytes): magic, u32 version, u32 flags, u64 segment,
u64 first sequence number, u64 salt, u64 XXH3 of the 40 bytes before.
Version 2 record: u64 seq, u32 payload length L, u32 header check, u64
payload checksum, then L payload bytes (u64 clock, one request frame).

Python 3 standard library only: the checks are not recomputed (XXH3 is not
in the standard library); the tests only damage bytes and ask the server
and `unreadd --check` what they make of them.
"""

import struct

MAGIC = b"URJRNL\0\0"
# A history record's frame opcode (persistence/journal.h): a change of
# replication id, not a command.
OP_HISTORY = 0xFF02
HDR = 48
REC_HDR = 24
HDR_V1 = 24
REC_HDR_V1 = 12


class Rec:
    def __init__(self, off, size, seq, op=None):
        self.off = off      # offset of its header in the file
        self.size = size    # header + payload
        self.seq = seq      # sequence number (None in version 1)
        self.op = op        # its frame's opcode (history: OP_HISTORY)

    @property
    def history(self):
        return self.op == OP_HISTORY

    @property
    def end(self):
        return self.off + self.size

    def __repr__(self):
        return "Rec(off=%d, size=%d, seq=%s)" % (self.off, self.size,
                                                  self.seq)


def header(data):
    """The header fields of a segment's bytes."""
    assert data[:8] == MAGIC, data[:8]
    version, flags, seg = struct.unpack_from("<IIQ", data, 8)
    h = {"version": version, "flags": flags, "seg": seg}
    if version == 2:
        h["first_seq"], h["salt"] = struct.unpack_from("<QQ", data, 24)
        h["len"] = HDR
    else:
        h["len"] = HDR_V1
    return h


def records(data):
    """The records of a sound segment, in file order."""
    h = header(data)
    out, off = [], h["len"]
    while off < len(data):
        if h["version"] == 2:
            seq, n = struct.unpack_from("<QI", data, off)
            size = REC_HDR + n
        else:
            (n,) = struct.unpack_from("<I", data, off)
            seq, size = None, REC_HDR_V1 + n
        assert off + size <= len(data), "not a sound segment"
        hl = REC_HDR if h["version"] == 2 else REC_HDR_V1
        (op,) = struct.unpack_from("<H", data, off + hl + 8 + 2)
        out.append(Rec(off, size, seq, op))
        off += size
    return out


def flip(data, at, mask=0xFF):
    return data[:at] + bytes([data[at] ^ mask]) + data[at + 1:]


def length_at(rec):
    """Offset of a version 2 record's length field."""
    return rec.off + 8


def reorder(data, recs, order):
    """The segment with its records in the given order (indexes into recs;
    a record may appear twice or not at all)."""
    return data[:recs[0].off] + b"".join(
        data[recs[i].off:recs[i].end] for i in order)
