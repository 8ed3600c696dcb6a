#!/usr/bin/env python3
"""other_protocol_rank.py MODE PORT RANK SIZE: a rank of another shardcomm version at the
rendezvous store on 127.0.0.1:PORT, for other_protocol_test.sh. It sends its hello, and
a blob of 700 bytes as a rank's, then reads the store's answer (magic, status, length,
then the sentence) and prints "status S: SENTENCE"; "closed" where the store closed the
connection unanswered. MODE:
  protocol2  the hello of shardcomm before 2026-12-07 (protocol 2: magic "SCST", rank,
             size, blob length, port), as an older library on one node sends it
  protocol4  magic "SCHV" and protocol 4, then more than a hello of protocol 3 holds,
             as a later library may send it"""
import socket
import struct
import sys

MAGIC, MAGIC_HELLO = 0x53435354, 0x53434856
BLOB = bytes(700)


def main():
    mode, port, rank, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if mode == "protocol2":
        hello = struct.pack("<5I", MAGIC, rank, size, len(BLOB), 0)
    elif mode == "protocol4":
        hello = struct.pack("<9I", MAGIC_HELLO, 4, 1, rank, size, len(BLOB), 0, 0, 0) + bytes(200)
    else:
        sys.exit(f"other_protocol_rank: unknown mode {mode}")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(hello + BLOB)
        head = b""
        while len(head) < 12:
            data = s.recv(12 - len(head))
            if not data:
                print("closed")
                return
            head += data
        magic, status, length = struct.unpack("<IiI", head)
        text = b""
        while status != 0 and len(text) < length:
            data = s.recv(length - len(text))
            if not data:
                break
            text += data
        print(f"magic {magic:#x} status {status}: {text.decode(errors='replace')}")


if __name__ == "__main__":
    main()
