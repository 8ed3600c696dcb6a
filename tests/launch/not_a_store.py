#!/usr/bin/env python3
"""not_a_store.py MODE PORT: a program other than a shardcomm store listening on PORT of
every address (with SO_REUSEADDR, as rank 0's store binds beside with_reserved_port.py's
reservation), for foreign_store_test.sh. Prints "listening" once it does, then serves
each connection by MODE until killed:
  echo    sends back every byte (as a rank's connection to itself does)
  banner  greets with a line of its own protocol (SSH's) and reads what comes
  closes  reads a few bytes and closes the connection unanswered (UCX's TCP listener)
  closes_slowly  the same 0.3 s later (one waiting for more of its own protocol), past
          the 0.25 s after which a rank takes a close for the store's eviction"""
import socket
import sys
import threading
import time


def serve(conn, mode):
    with conn:
        try:
            if mode == "echo":
                while data := conn.recv(4096):
                    conn.sendall(data)
            elif mode == "banner":
                conn.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
                while conn.recv(4096):
                    pass
            else:
                conn.recv(8)
                if mode == "closes_slowly":
                    time.sleep(0.3)
        except OSError:
            pass


def main():
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode not in ("echo", "banner", "closes", "closes_slowly"):
        sys.exit(f"not_a_store: unknown mode {mode}")
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    s.listen(64)
    print("listening", flush=True)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn, mode), daemon=True).start()


if __name__ == "__main__":
    main()
