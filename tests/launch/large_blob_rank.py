#!/usr/bin/env python3
"""large_blob_rank.py MODE PORT RANK SIZE: a rank at the rendezvous store on
127.0.0.1:PORT whose blob is 1 MiB (the most a store takes), so that the table of a few
such ranks is larger than a loopback connection's socket buffers hold, for
store_tree_test.sh. It sends its hello (protocol 3, no launch id) and its blob, then:
  read   reads what the store sends until the store closes the connection
  slow   the same, 256 KiB every 0.25 s (1 MiB/s, a slow link)
  stall  reads nothing for 60 s, as a rank stopped after its hello (kill -STOP) does
It never says it has the table (the word at the tree's end), as a rank hung there."""
import socket
import struct
import sys
import time

MAGIC_HELLO, PROTOCOL, JOIN = 0x53434856, 3, 1
BLOB = bytes(1 << 20)


def main():
    mode, port, rank, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if mode not in ("read", "slow", "stall"):
        sys.exit(f"large_blob_rank: unknown mode {mode}")
    hello = struct.pack("<7I", MAGIC_HELLO, PROTOCOL, JOIN, rank, size, len(BLOB), 0) + bytes(96)
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(hello + BLOB)
        if mode == "stall":
            time.sleep(60)
            return
        while s.recv(256 << 10 if mode == "slow" else 1 << 20):
            if mode == "slow":
                time.sleep(0.25)


if __name__ == "__main__":
    main()
