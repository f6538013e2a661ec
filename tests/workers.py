"""Long-lived worker processes that host receivers for the tests.

Each worker imports torch once and then serves commands over a control pipe,
so a module's tests share a few processes instead of spawning per test. Every
call from the test side waits a bounded time.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import torch
import torch.multiprocessing as mp

from conformance.probes import open_fds

CALL_TIMEOUT = 30.0


def pattern(manifest: list[tuple[str, str, tuple]], version: int) -> dict[str, torch.Tensor]:
    """Weights in which every element of every tensor encodes `version` (torn reads show)."""
    out = {}
    for name, dtype, shape in manifest:
        dt = getattr(torch, dtype)
        if dt == torch.bool:
            out[name] = torch.full(shape, bool(version % 2), dtype=dt)
        else:
            out[name] = torch.full(shape, version % 100, dtype=dt)
    return out


def versions_in(weights) -> set[int]:
    """The set of pattern values seen across all tensors (one element means consistent)."""
    seen = set()
    for t in weights.values():
        if t.numel():
            if t.dtype == torch.bool:
                continue
            flat = t.reshape(-1)
            lo, hi = flat.min().item(), flat.max().item()
            seen.update({int(lo), int(hi)})
    return seen


class _Commands:
    def __init__(self):
        self.receiver = None
        self.stats = None
        self.readers: list[threading.Thread] = []

    def attach(self, handle, mode="push", target=None, zero_copy=False):
        import weightsync as ws

        self.receiver = ws.Receiver(handle, target, mode=mode, zero_copy=zero_copy)
        return True

    def connect(self, timeout=10.0):
        return self.receiver.connect(timeout=timeout)

    def state(self):
        r = self.receiver
        with r.reading():
            return r.version, {k: v.detach().cpu().clone() for k, v in r.weights.items()}

    def poll(self, timeout=0.0):
        return self.receiver.poll(timeout)

    def start_readers(self, n=2):
        """Threads that read continuously inside reading() and count torn reads (CONS-1)."""
        self.stats = {"reads": 0, "torn": 0, "versions": set(), "stop": False}
        r = self.receiver

        def loop():
            while not self.stats["stop"] and not r.stopped:
                with r.reading():
                    seen = versions_in(r.weights)
                    version = r.version
                if len(seen) > 1 or (version is not None and seen and seen != {version % 100}):
                    self.stats["torn"] += 1
                self.stats["reads"] += 1
                self.stats["versions"].add(version)

        self.readers = [threading.Thread(target=loop, daemon=True) for _ in range(n)]
        for t in self.readers:
            t.start()
        return True

    def stop_readers(self):
        self.stats["stop"] = True
        for t in self.readers:
            t.join(timeout=10)
        return {k: v for k, v in self.stats.items() if k != "stop"}

    def close(self):
        if self.receiver is not None:
            self.receiver.close()
        self.receiver = None
        return True

    def resources(self):
        return {"threads": sorted(t.name for t in threading.enumerate()), "fds": open_fds()}

    def pid(self):
        return os.getpid()


def serve(ctl) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    commands = _Commands()
    while True:
        try:
            name, args, kwargs = ctl.recv()
        except EOFError:
            return
        if name == "exit":
            commands.close()
            ctl.send(("ok", None))
            return
        try:
            ctl.send(("ok", getattr(commands, name)(*args, **kwargs)))
        except Exception as e:  # noqa: BLE001 - reported to the test
            ctl.send(("err", e))


class RemoteError(Exception):
    pass


class Worker:
    """The test side of one worker process."""

    def __init__(self, ctx):
        self.ctl, theirs = ctx.Pipe()
        self.process = ctx.Process(target=serve, args=(theirs,), daemon=True)
        self.process.start()
        theirs.close()

    def call(self, name, *args, timeout=CALL_TIMEOUT, **kwargs):
        self.ctl.send((name, args, kwargs))
        return self.result(timeout)

    def start(self, name, *args, **kwargs):
        """Sends a command without waiting; collect with result()."""
        self.ctl.send((name, args, kwargs))

    def result(self, timeout=CALL_TIMEOUT):
        if not self.ctl.poll(timeout):
            raise TimeoutError(f"worker {self.process.pid} did not answer within {timeout}s")
        status, value = self.ctl.recv()
        if status == "err":
            raise value
        return value

    def kill(self):
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(timeout=10)

    def stop(self):
        if self.process.is_alive():
            try:
                self.call("exit", timeout=10)
            except (TimeoutError, OSError, EOFError):
                pass
            self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)


def start_workers(n: int) -> list[Worker]:
    ctx = mp.get_context("spawn")
    workers = [Worker(ctx) for _ in range(n)]
    deadline = time.monotonic() + 120
    for w in workers:
        w.call("pid", timeout=max(1.0, deadline - time.monotonic()))
    return workers


def stop_workers(workers: list[Worker]) -> None:
    """Ask every worker to exit first, then join them: the waits overlap instead of adding up."""
    for w in workers:
        if w.process.is_alive():
            try:
                w.start("exit")
            except (OSError, EOFError):
                pass
    for w in workers:
        w.process.join(timeout=10)
        w.stop()


def forked_worker(handle, out) -> None:
    """A user's worker under a plain fork: reports what Receiver(handle) raised (CON-2), then exits."""
    import weightsync as ws

    try:
        ws.Receiver(handle).connect(10)
        out.put("connected")
    except Exception as e:  # noqa: BLE001 - reported to the test
        out.put(f"{type(e).__name__}: {e}")
