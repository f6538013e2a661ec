"""What a wake-up costs when the woken process sat idle (docs/benchmark.md, "The targets this run misses").

A bare socket pair between this process and a spawned one, no weightsync, no torch: the
other side waits in poll() and echoes each message; this side sends, spins on poll(0) for
the echo (as a sender spinning for answers does), and before each send stays busy for an
idle gap, the time the other side then sits in poll(). It prints the p50 round trip per gap,
then the benchmark's pipe floor measured in the same run (a Pipe, blocking reads, no gap).
The difference between gap 0 and the larger gaps is what a receiver pays for having been
idle, before any Python of the protocol runs. Run by hand: `python tools/idle_wake.py [SENDS]`
(default 5000); it asserts nothing.
"""

from __future__ import annotations

import multiprocessing as mp
import select
import socket
import statistics
import sys
import time

GAPS_US = (0, 10, 20, 40, 80)


def _echo(sock: socket.socket) -> None:
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    while True:
        poller.poll(5000)
        data = sock.recv(128)
        if not data or data == b"end":
            return
        sock.send(data)


def _pipe_echo(conn) -> None:
    while (msg := conn.recv()) is not None:
        conn.send(msg)


def main(sends: int = 5000) -> int:
    ctx = mp.get_context("spawn")
    ours, theirs = socket.socketpair()
    proc = ctx.Process(target=_echo, args=(theirs,))
    proc.start()
    poller = select.poll()
    poller.register(ours.fileno(), select.POLLIN)
    clock = time.perf_counter
    for gap_us in GAPS_US:
        gap, times = gap_us / 1e6, []
        for _ in range(sends):
            start = clock()
            while clock() - start < gap:
                pass
            t = clock()
            ours.send(b"receive" * 4)
            while not poller.poll(0):
                pass
            ours.recv(128)
            times.append(clock() - t)
        print(f"idle gap {gap_us:3d} us: socket round trip p50 {statistics.median(times[sends // 10:]) * 1e6:6.1f} us")
    ours.send(b"end")
    proc.join(10)
    here, there = ctx.Pipe()
    proc = ctx.Process(target=_pipe_echo, args=(there,))
    proc.start()
    times = []
    for i in range(sends):
        t = clock()
        here.send(i)
        here.recv()
        times.append(clock() - t)
    here.send(None)
    proc.join(10)
    print(f"pipe round trip (the benchmark's floor) p50 {statistics.median(times[sends // 10:]) * 1e6:6.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*(int(a) for a in sys.argv[1:])))
