#!/usr/bin/env python3
"""large_blob_rank.py MODE PORT RANK SIZE: a rank at the rendezvous store on
127.0.0.1:PORT whose blob is 1 MiB (the most a store takes), so that the table of a few
such ranks is larger than a loopback connection's socket buffers hold, for
store_tree_test.sh. It sends its hello (protocol 3, no launch id) and its blob, then:
  read   reads what the store sends until the store closes the connection, printing
         when its first bytes came ("answered at TIME", the epoch's seconds)
  slow   the same, 256 KiB every 0.25 s (1 MiB/s, a slow link)
  stall  reads nothing for 60 s, as a rank stopped after its hello (kill -STOP) does
  full   takes its whole answer and says it has the table (the word at the tree's end),
         printing when ("answered at TIME", the epoch's seconds; or the failure
         answered), then the store's word ("the store said STATUS")
  half_word  takes its whole answer and sends the header of a failure's word and 9 of
         the 40 bytes of its sentence: a rank stopped in the middle of its word; then
         reads nothing for 60 s
The others never say they have the table, as a rank hung there does. Like a rank, each
tries again until the store listens (rank 0 may start after it), 20 s at most."""
import struct
import sys
import time

from store_wire import JOIN, MAGIC, MAGIC_HELLO, PEER_FAILED, PROTOCOL, answer, connect, read_answer

BLOB = bytes(1 << 20)


def take_part(s, rank):
    status, payload = read_answer(s)
    if status != 0:
        print(f"rank {rank}: the store answered {status}: {payload.decode()}", flush=True)
        return 1
    print(f"rank {rank} answered at {time.time():.3f} ({len(payload)} bytes)", flush=True)
    answer(s, 0, b"")
    status, payload = read_answer(s)
    print(f"rank {rank}: the store said {status} {payload.decode()}", flush=True)
    return 0 if status == 0 else 1


def main():
    mode, port, rank, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    if mode not in ("read", "slow", "stall", "full", "half_word"):
        sys.exit(f"large_blob_rank: unknown mode {mode}")
    hello = struct.pack("<7I", MAGIC_HELLO, PROTOCOL, JOIN, rank, size, len(BLOB), 0) + bytes(96)
    with connect(port) as s:
        s.sendall(hello + BLOB)
        print(f"rank {rank} sent its hello", flush=True)
        if mode == "stall":
            time.sleep(60)
            return
        if mode == "full":
            return take_part(s, rank)
        if mode == "half_word":
            read_answer(s)
            s.sendall(struct.pack("<IiI", MAGIC, PEER_FAILED, 40) + b"rank 1: a")
            print(f"rank {rank} sent half its word", flush=True)
            time.sleep(60)
            return
        first = True
        while s.recv(256 << 10 if mode == "slow" else 1 << 20):
            if first and mode == "read":
                print(f"rank {rank} answered at {time.time():.3f}", flush=True)
            first = False
            if mode == "slow":
                time.sleep(0.25)


if __name__ == "__main__":
    sys.exit(main())
