"""The worker processes that play the receivers, started once and reused across cases.

Starting a process that imports torch costs seconds on a small machine, so the pool
spawns its workers once; each then runs a command loop and takes the receiving side of
whatever case the parent names (a weightsync receiver, a pipe echo, a queue consumer).
A case that fails must leave its workers ready for the next one.
"""

from __future__ import annotations

import ctypes
import gc
import socket
import sys
import time
from multiprocessing import connection

import torch

from .. import Receiver
from ..clock import Deadline
from .cases import TIMEOUT, sync


def _worker(index: int, ctl, data_q, ack_q) -> None:
    """One reusable worker: runs the receiving side of whatever case `ctl` names.

    Each case runs in `_case`, so that what it held (a receiver's weights, a queue's
    copies: up to a GB each) is freed when it ends, not when the next case of its kind
    replaces it; the heap is then handed back to the system. Eight workers each keeping
    their last case's tensors once ran a 24 GB machine out of memory.
    """
    torch.set_num_threads(1)
    while True:
        cmd = ctl.recv()
        if cmd[0] == "exit":
            return
        try:
            result = _case(index, cmd, ctl, data_q, ack_q)
            ctl.send(("done", result))
        except Exception as e:  # noqa: BLE001 - reported to the parent, which names the case
            for arg in cmd[1:]:  # a handle or pipe end left open would keep the sender waiting
                conn = getattr(arg, "conn", arg)
                if isinstance(conn, (connection.Connection, socket.socket)):
                    conn.close()
            ctl.send(("error", f"{type(e).__name__}: {e}"))
        cmd = None
        _give_back_memory()


def _case(index: int, cmd: tuple, ctl, data_q, ack_q):
    kind = cmd[0]
    if kind == "ping":
        return None
    if kind == "weightsync":
        _, handle, mode, zero_copy = cmd
        with Receiver(handle, mode=mode, zero_copy=zero_copy) as rx:
            rx.connect(timeout=TIMEOUT)
            ctl.send(("connected", index))
            while not rx.stopped:
                if mode == "pull":
                    rx.poll(timeout=1.0)
                else:
                    time.sleep(0.005)  # applies happen on the receiver's own thread
            return rx.version
    if kind == "gloo":
        from .gloo import gloo_worker

        gloo_worker(*cmd[1:])
        return None
    if kind == "pipe":
        _, conn = cmd
        while (msg := conn.recv()) is not None:
            conn.send(msg)
        conn.close()
        return None
    if kind == "queue":
        _, shapes, device = cmd
        own = [torch.empty(s, dtype=dtype, device=device) for s, dtype in shapes]
        # Bounded: a sender that failed mid-case may never put the None that ends it.
        while (item := data_q.get(timeout=TIMEOUT)) is not None:
            version, state = item
            with torch.no_grad():
                torch._foreach_copy_(own, list(state.values()))
            sync(device)
            del state, item
            ack_q.put((index, version))
        return None
    raise ValueError(f"unknown command {kind!r}")


def _give_back_memory() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)  # glibc keeps freed heap pages otherwise
    except (OSError, AttributeError):
        pass


class Pool:
    """`n` spawned workers, each with a control pipe and a data queue; one shared ack queue."""

    def __init__(self, n: int, ctx):
        self.ctx = ctx
        self.ack_q = ctx.Queue()
        self.data_q = [ctx.Queue() for _ in range(n)]
        self.ctl: list = [None] * n
        self.procs: list = [None] * n
        for i in range(n):
            self._start(i)
        self.command(n, lambda i: ("ping",))
        self.expect(n, "done")  # every worker has imported torch and waits for cases

    def _start(self, i: int) -> None:
        ours, theirs = self.ctx.Pipe()
        p = self.ctx.Process(target=_worker, args=(i, theirs, self.data_q[i], self.ack_q), daemon=True)
        p.start()
        theirs.close()
        self.ctl[i], self.procs[i] = ours, p

    def heal(self) -> list[int]:
        """Starts a new worker in place of each one that died (the kernel's OOM killer, a crash), so that
        one failed case does not fail every later one; returns their indices."""
        dead = [i for i, p in enumerate(self.procs) if not p.is_alive()]
        for i in dead:
            self.ctl[i].close()
            self.data_q[i] = self.ctx.Queue()
            self._start(i)
        for i in dead:
            self.ctl[i].send(("ping",))
        for i in dead:
            if not self.ctl[i].poll(TIMEOUT) or self.ctl[i].recv()[0] != "done":
                raise RuntimeError(f"worker {i} was restarted and did not answer")
            print(f"worker {i} had died; a new one takes its place", file=sys.stderr, flush=True)
        return dead

    def command(self, n: int, make) -> None:
        for i in range(n):
            self.ctl[i].send(make(i))

    def expect(self, n: int, what: str, timeout: float = TIMEOUT) -> list:
        out = []
        for i in range(n):
            if not self.ctl[i].poll(timeout):
                raise TimeoutError(f"worker {i} did not answer {what!r} within {timeout:.0f} s")
            kind, value = self.ctl[i].recv()
            if kind == "error":
                raise RuntimeError(f"worker {i}: {value}")
            if kind != what:
                raise RuntimeError(f"worker {i} answered {kind!r}, expected {what!r}")
            out.append(value)
        return out

    def drain(self, n: int, timeout: float = 30.0) -> None:
        """After a failed case: read each worker's messages until it reports the case ended."""
        for c in self.ctl[:n]:
            deadline = Deadline(timeout)
            while c.poll(deadline.left()):
                if c.recv()[0] in ("done", "error"):
                    break

    def stop(self) -> None:
        """Tells every worker to exit, without waiting: they end (seconds, on a small machine) while the
        caller writes its report; close() then waits for them."""
        for c in self.ctl:
            try:
                c.send(("exit",))
            except (OSError, ValueError):  # a worker gone, or stop() called before
                pass

    def close(self) -> None:
        self.stop()
        for p in self.procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        for q in (*self.data_q, self.ack_q):
            q.close()
            q.join_thread()
