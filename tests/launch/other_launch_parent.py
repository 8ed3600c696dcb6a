#!/usr/bin/env python3
"""other_launch_parent.py PORT SIZE LAUNCH OTHER: rank 1 of a world of SIZE, of launch
LAUNCH (from SC_LAUNCH_ID), at the rendezvous store on 127.0.0.1:PORT, whose hello names
as the port it serves its children on in the table's tree one where a rank of launch
OTHER listens instead: what a child finds where its parent exited and a rank of another
launch on the host (two jobs on one host) got its port, for store_tree_test.sh. That
rank, rank 5 of OTHER and world size SIZE, answers a child's hello as a parent does: one
of another launch (both ids known) or another world size with SC_ERR_MISMATCH and "rank 5
of launch OTHER (from SC_LAUNCH_ID), world size SIZE", any other with a table of the
length the child expects (the one rank 1 got from the store: what another launch of the
same program on the same hosts likely has), printing first "refused rank R of launch
'ID'" or "gave rank R the table". Rank 1 takes its answer (a child of rank 0, it gets
the table) and then says nothing, as a rank still serving its children does, until the
store's word, which it prints ("the store said STATUS TEXT")."""
import socket
import struct
import sys
import threading

from store_wire import (CHILD, JOIN, MAGIC_HELLO, MISMATCH, PROTOCOL, answer, connect,
                        read_answer, read_exactly)

HELLO = struct.Struct("<7I64s32s")
ROLE = struct.Struct("<6IHH16s")
BLOB = b"a stand-in's blob"


def serve(listener, size, other, table):
    """The rank of launch other on the port: each child's hello answered."""
    whom = f"rank 5 of launch {other} (from SC_LAUNCH_ID), world size {size}".encode()
    while True:
        conn, _ = listener.accept()
        with conn:
            try:
                _, _, kind, rank, their_size, _, _, launch, _ = HELLO.unpack(
                    read_exactly(conn, HELLO.size))
            except (EOFError, OSError):
                continue
            launch = launch.split(b"\0")[0].decode(errors="replace")
            # Said before the answer, which the ranks may act on before a print after it.
            if kind == CHILD and (their_size != size or (launch and launch != other)):
                print(f"refused rank {rank} of launch {launch!r}", flush=True)
                answer(conn, MISMATCH, whom)
                continue
            table.wait(30)
            print(f"gave rank {rank} the table", flush=True)
            answer(conn, 0, table.data)


def main():
    port, size, launch, other = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    listener = socket.create_server(("127.0.0.1", 0))
    table = threading.Event()
    table.data = b""
    threading.Thread(target=serve, args=(listener, size, other, table), daemon=True).start()
    hello = HELLO.pack(MAGIC_HELLO, PROTOCOL, JOIN, 1, size, len(BLOB),
                       listener.getsockname()[1], launch.encode(), b"SC_LAUNCH_ID")
    with connect(port) as s:
        s.sendall(hello + BLOB)
        print(f"rank 1 sent its hello, port {listener.getsockname()[1]}", flush=True)
        status, payload = read_answer(s)
        if status != 0:
            print(f"rank 1: the store answered {status}: {payload.decode()}", flush=True)
            return 1
        parent, _, _, nchildren, table_len = ROLE.unpack_from(payload)[:5]
        if parent != 0:
            print(f"rank 1: its parent is rank {parent}, not rank 0", flush=True)
            return 1
        table.data = payload[ROLE.size + 4 * nchildren:][:table_len]
        table.set()
        status, text = read_answer(s)
        print(f"rank 1: the store said {status} {text.decode()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
