"""The rendezvous store's wire as the Python stand-ins for ranks speak it
(large_blob_rank.py, other_launch_parent.py): the constants of bootstrap_wire.h, a
connection made as a rank makes it, exact reads, an answer read and written."""
import socket
import struct
import time

MAGIC_HELLO, PROTOCOL, MAGIC = 0x53434856, 3, 0x53435354
JOIN, CHILD = 1, 3  # sc_store_kind_t
PEER_FAILED, MISMATCH = -5, -6  # SC_ERR_PEER_FAILED, SC_ERR_MISMATCH


def connect(port):
    """A connection to 127.0.0.1:PORT, tried again until the store listens (rank 0 may
    start after the rank), 20 s at most."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=60)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def read_exactly(s, n):
    buf = bytearray()
    while len(buf) < n:
        got = s.recv(min(n - len(buf), 1 << 20))
        if not got:
            raise EOFError(f"the connection closed after {len(buf)} of {n} bytes")
        buf += got
    return bytes(buf)


def read_answer(s):
    """An answer's status and payload."""
    magic, status, length = struct.unpack("<IiI", read_exactly(s, 12))
    if magic != MAGIC:
        raise ValueError(f"an answer of magic {magic:#x}")
    return status, read_exactly(s, length)


def answer(s, status, payload):
    """Sends an answer: its header, then payload (bytes)."""
    s.sendall(struct.pack("<IiI", MAGIC, status, len(payload)) + payload)
