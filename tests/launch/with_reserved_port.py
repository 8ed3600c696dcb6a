#!/usr/bin/env python3
"""with_reserved_port.py VAR PROGRAM ARGS...: runs PROGRAM with the environment variable
VAR set to a TCP port that nothing else holds, and the port after it (where shardcomm's
rendezvous goes when VAR is MASTER_PORT, torch.distributed's), reserved for the whole run the way scrun
reserves the ports it picks (docs/scrun.md): a socket bound to the port alone (so the
bind fails while anything holds it), then given SO_REUSEADDR and never listening. The
rank serving the rendezvous store binds beside it with SO_REUSEADDR; another run's
probe, or another reservation, cannot. The socket is not inherited by PROGRAM. Exits
with PROGRAM's status."""
import os
import random
import socket
import subprocess
import sys


def hold(port):
    """A socket holding port, or None where something holds it already."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("0.0.0.0", port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        return s
    except OSError:
        s.close()
        return None


def reserve(rng):
    """Sockets holding two free ports in a row in scrun's range (20000-31999), and the
    first port."""
    for _ in range(200):
        port = rng.randrange(20000, 31999)
        first = hold(port)
        second = hold(port + 1) if first else None
        if second:
            return [first, second], port
        if first:
            first.close()
    sys.exit("with_reserved_port: no two free ports in a row in 20000-31999 after 200 tries")


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: with_reserved_port.py VAR PROGRAM [ARGS...]")
    held, port = reserve(random.SystemRandom())
    env = dict(os.environ)
    env[sys.argv[1]] = str(port)
    try:
        rc = subprocess.call(sys.argv[2:], env=env)
    finally:
        for s in held:
            s.close()
    sys.exit(rc if rc >= 0 else 128 - rc)


if __name__ == "__main__":
    main()
