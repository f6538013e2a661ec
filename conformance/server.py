"""The command server that runs inside each worker process (the suite's receivers).

`main` is the worker process's entry point: `pool.Worker` starts it by name with
the spawn start method, so it stays a module-level function. It imports the
implementation under test by name and answers commands from the control pipe,
`("ok", value)` or `("err", RemoteError)`, each run by a `Server.do_<cmd>` method
around one `Receiver` at a time. Only the binding is used: `Receiver`, its public
methods, the error classes (`names.ERROR_NAMES`) and `CAPABILITIES`.

Faults are made through the binding alone: a failing apply by giving a target
tensor another shape (ACK-7), a slow one by a mapping target whose reads pause.
The worker's stdout and stderr go to a file the suite reads, since an
implementation must print nothing (API-6). The commands that read from other
threads are in `readers.py`.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import threading
import time

from . import timing as tm
from .probes import freeze_imports, shm_segments
from .readers import ReaderCommands
from .remote import RemoteError, describe_error
from .targets import ControlledMapping, build_target, held_by


def _attempt(ws, fn):
    try:
        return ("value", fn())
    except Exception as e:  # noqa: BLE001 - every outcome is reported to the suite
        return ("error", describe_error(ws, e))


#: A descriptor of the unlinked file that receives this worker's fds 1 and 2 (API-6), and
#: how much of it was reported.
_OUTPUT: int | None = None
_OUTPUT_POS = 0


class Server(ReaderCommands):
    """The state of one worker process: one receiver at a time and its helper threads."""

    def __init__(self, ws):
        import torch

        self.ws = ws
        self.torch = torch
        self.rx = None
        self.refusal_handle = None  # the handle zero_copy_refusals was given, for the open that follows
        self.held_handle = None  # a handle referenced past its Receiver's close (do_open's keep_handle)
        self.target = None
        self.tensors: dict = {}
        self.spec: dict = {}
        self.saved = None  # the .data a "raise" fault took away
        self.shm_before: frozenset = frozenset()  # the shared segments here when the receiver was opened
        self.rank = None  # a scripted receiver's gloo rank and its buffer size (do_rank_join)
        self._init_threads()
        self.baseline_threads = {t.ident for t in threading.enumerate()}

    # -- helpers --
    def _read(self):
        from .model import describe

        return self.rx.version, describe(self.rx.weights)

    # -- commands --
    def do_ping(self):
        return os.getpid()

    def do_open(self, handle, mode="push", zero_copy=False, target=None, keep_handle=False):
        """A new Receiver; `target` is None or (kind, spec) with kind mapping | module | tensordict.
        `handle` None: the one zero_copy_refusals was given (a handle is pickled once, CON-3). `keep_handle`: the
        handle stays referenced until the next open, as a worker's `Process` argument lives as long as the worker."""
        if handle is None:
            handle, self.refusal_handle = self.refusal_handle, None
        self.do_discard()
        self.held_handle = handle if keep_handle else None
        gc.collect()
        self.shm_before = shm_segments()  # what this receiver leaves is judged against this (LIFE-5)
        tgt = None
        if target is not None:
            tgt, self.tensors = build_target(self.torch, target[0], target[1])
            self.saved = None
            self.spec = {name: (dtype, tuple(shape)) for name, dtype, shape in target[1]}
            self.target = tgt
        self.rx = self.ws.Receiver(handle, tgt, mode=mode, zero_copy=zero_copy)
        self.mode = mode
        return None

    def do_zero_copy_refusals(self, handle, spec):
        """Receiver(handle, target, zero_copy=True) for a mapping and a TensorDict target: each must raise
        ValueError at once (ZC-1, API-3). Returns what each attempt gave: "ValueError", or what else.
        The handle is kept for the next open (CON-3: it crosses to this process once)."""
        self.refusal_handle = handle
        out = {}
        kinds = [k for k in ("mapping", "tensordict") if k in self.ws.CAPABILITIES]
        for kind in kinds:
            try:
                target, _ = build_target(self.torch, kind, spec)
            except (KeyError, ValueError, RuntimeError):  # names a nested TensorDict cannot hold ("a", "a.0")
                continue
            try:
                mode = "push" if "push" in self.ws.CAPABILITIES else "pull"  # a mode the binding takes
                rx = self.ws.Receiver(handle, target, mode=mode, zero_copy=True)
            except ValueError:
                out[kind] = "ValueError"
                continue
            except Exception as e:  # noqa: BLE001 - reported to the suite
                out[kind] = f"{type(e).__name__}: {e}"
                continue
            out[kind] = "accepted"
            try:
                rx.close()
            except Exception:  # noqa: BLE001
                pass
        return out

    def do_follow(self, url, mode="push", bound=60.0, zero_copy=False):
        """The receiver test-control contract (docs/conformance.md), played by the binding's Receiver:
        join `url`, record (version, sha256 of the arrays' bytes in manifest order) at every version it
        holds, until it is stopped or `bound` passes. Returns what a --receiver-cmd program prints."""
        import hashlib

        self.do_discard()
        out = {"applied": [], "stopped": False, "error": None}
        try:
            self.rx = rx = self.ws.Receiver(url, mode=mode, zero_copy=zero_copy)
            rx.connect(bound)
        except Exception as e:  # noqa: BLE001 - reported as the program's error line
            out["error"] = describe_error(self.ws, e)
            return out
        torch = self.torch

        def record():
            with rx.reading():
                version = rx.version
                raw = b"".join(t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
                               for t in rx.weights.values())
            if version is not None and (not out["applied"] or out["applied"][-1][0] != version):
                out["applied"].append((version, hashlib.sha256(raw).hexdigest()))

        end = time.monotonic() + bound
        try:
            record()
            while not rx.stopped and time.monotonic() < end:
                if mode == "pull":
                    rx.poll(0.05)
                else:
                    time.sleep(0.005)
                record()
        except Exception as e:  # noqa: BLE001
            out["error"] = describe_error(self.ws, e)
        out["stopped"] = bool(rx.stopped)
        if rx.failure is not None and out["error"] is None:
            out["error"] = describe_error(self.ws, rx.failure)
        return out

    def do_discard(self):
        """Close the previous receiver, if any, ignoring its errors (between tests)."""
        self.rank = None
        self._stop_threads()
        if self.rx is not None:
            try:
                self.rx.close()
            except Exception:  # noqa: BLE001 - a broken implementation must not break the worker
                pass
        self.rx = None
        # Every reference to what the last receiver held goes too: a zero-copy module target's tensors are views
        # of its slot, and a test whose receiver has no target must not find that mapping still here (LIFE-5).
        self.target, self.tensors, self.spec, self.saved = None, {}, {}, None
        self.do_output()  # what earlier tests' receivers printed (their close included) is not the next test's
        return None

    # -- the data plane of a scripted receiver (NET-2) --
    # Its gloo rank runs here, not in the suite's process: gloo aborts a process whose receive
    # gets more bytes than it posted, which must cost the suite a worker, not its run.

    def do_rank_join(self, plane: dict, after_joined: int = 0) -> bytes:
        """Rank 1 over Init's `data_plane` (sets `joined` first), then the transfer of Init's version: its bytes.
        `after_joined`: keys it writes once `joined` is set, and 0.2 s it lets pass, before the group's own keys,
        as a construction may (NET-6: the sender counts a receiver's keys only until `joined`)."""
        import datetime

        import torch.distributed as dist

        self.rank = None
        host, _, port = plane["store"].rpartition(":")
        timeout = datetime.timedelta(seconds=tm.T)
        store = dist.TCPStore(host.strip("[]"), int(port), is_master=False, wait_for_workers=False, timeout=timeout)
        opts = dist.ProcessGroupGloo._Options()
        opts._devices = [dist.ProcessGroupGloo.create_device(hostname="127.0.0.1")]
        opts._timeout = timeout
        keys = dist.PrefixStore(plane["prefix"], store)
        keys.set("joined", "1")  # NET-2: the sender builds its side once this key exists
        if after_joined:
            for k in range(after_joined):
                keys.set(f"construction-{k}", "x")
            time.sleep(0.2)  # not a synchronisation: a sender that still counts keys has looked by now
        self.rank = (dist.ProcessGroupGloo(keys, 1, 2, opts), plane["nbytes"])
        return self.do_rank_take()

    def do_rank_take(self) -> bytes:
        """The next transfer, into a buffer of exactly Init's `nbytes`: its bytes."""
        group, nbytes = self.rank
        buf = self.torch.empty(nbytes, dtype=self.torch.uint8)
        group.recv([buf], 0, 0).wait()
        return buf.numpy().tobytes()

    def do_rank_drop(self) -> None:
        """Ends the rank: its sockets close, so the sender's next transfer to it fails (NET-3)."""
        self.rank = None

    def do_connect(self, timeout):
        return self.rx.connect(timeout)

    def do_snapshot(self, lock=True, with_target=False):
        """(version, described weights), read inside reading(); with_target adds what the target object
        holds, read in the same block (None without a target)."""
        from .model import describe

        def read():
            held = None if self.target is None else describe(held_by(self.target))
            return (*self._read(), held) if with_target else self._read()

        if lock:
            with self.rx.reading():
                return read()
        return read()

    def do_peek(self):
        return self.rx.version

    def do_poll(self, *timeout):
        """poll(timeout), or poll() with the implementation's default when none is given."""
        return self.rx.poll(*timeout)

    def do_state(self):
        return {"version": self.rx.version, "stopped": bool(self.rx.stopped)}

    def do_fault(self, mode):
        """Make the next applies fail, pause them, or neither (None).

        "raise": swap the `.data` of the target's first tensor for one of another shape, so
        the target no longer matches the manifest and every apply must fail with an error
        ack, writing nothing (ACK-7, ACK-6): a fault any conforming implementation meets.
        ("slow", s): a mapping target pauses s seconds whenever it is read (ACK-7).
        ("late_raise", s): as "raise", and a mapping target pauses s seconds once, at the next read:
        the apply fails about s seconds after the Receive arrived.
        """
        if self.target is None:
            raise ValueError("fault needs a target")
        name = next(iter(self.tensors))
        t = self._held(name)
        dtype, shape = self.spec[name]
        torch = self.torch
        with torch.no_grad():
            if isinstance(mode, tuple) and mode[0] == "late_raise" and isinstance(self.target, ControlledMapping):
                self.target.pause_once = float(mode[1])
                mode = "raise"
            if mode == "raise":
                if self.saved is None:
                    self.saved = t.data
                t.data = torch.zeros((*shape, 2), dtype=getattr(torch, dtype))
            elif mode is None:
                if self.saved is not None:  # the bytes it held: a failed apply wrote none (ACK-7)
                    t.data, self.saved = self.saved, None
                if isinstance(self.target, ControlledMapping):
                    self.target.pause = self.target.pause_once = 0.0
            elif isinstance(mode, tuple) and mode[0] == "slow" and isinstance(self.target, ControlledMapping):
                self.target.pause = float(mode[1])
            else:
                raise ValueError(f"unknown fault {mode!r} for this target")
        return None

    def _held(self, name: str):
        """The tensor the target holds under `name` now: an implementation may have put another tensor there since
        the target was built (TorchRL's scheme rebinds a module's tensors at connect), and a fault must reach
        the one the next apply writes."""
        tgt = self.target
        if isinstance(tgt, ControlledMapping):
            return tgt._tensors[name]
        if isinstance(tgt, self.torch.nn.Module):
            *path, leaf = name.split(".")
            for part in path:
                tgt = getattr(tgt, part)
            return getattr(tgt, leaf)
        if hasattr(tgt, "batch_size"):  # a TensorDict
            return tgt.get(tuple(name.split(".")))
        return self.tensors[name]

    def do_unwritable(self):
        """Give the target's first tensor one that matches the manifest but refuses in-place
        writes (made under inference_mode): applying into it fails for a reason other than
        a mismatch (INIT-6)."""
        if self.target is None:
            raise ValueError("unwritable needs a target")
        name = next(iter(self.tensors))
        t = self._held(name)
        with self.torch.inference_mode():
            frozen = self.torch.zeros(t.shape, dtype=t.dtype)
        if isinstance(self.target, ControlledMapping):
            self.target._tensors[name] = frozen
        else:
            with self.torch.no_grad():
                t.data = frozen
        return None

    def do_observe(self, snapshot=True):
        """Everything the binding shows of the receiver, each read on its own (API-3, LIFE-*).

        Each entry is ("value", v) or ("error", RemoteError); `snapshot` is (version,
        described weights) read inside reading() unless the receiver is closed (LIFE-6).
        """
        from .model import describe

        rx, out, target = self.rx, {}, self.target
        for name in ("version", "stopped", "closed"):
            out[name] = _attempt(self.ws, lambda n=name: getattr(rx, n))
        out["failure"] = _attempt(self.ws, lambda: None if rx.failure is None else describe_error(self.ws, rx.failure))
        if snapshot:
            closed = out["closed"] == ("value", True)

            def snap():
                if closed:
                    return rx.version, describe(rx.weights), target_now()
                with rx.reading():
                    return rx.version, describe(rx.weights), target_now()

            def target_now():  # what the worker's own target object holds (API-3, ACK-3, LIFE-5)
                return None if target is None else describe(held_by(target))

            out["snapshot"] = _attempt(self.ws, snap)
        out["output"] = self.do_output()
        return out

    def do_output(self):
        """What this process wrote to its stdout and stderr since the last call (API-6)."""
        if _OUTPUT is None:
            return ""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        global _OUTPUT_POS
        data = os.pread(_OUTPUT, 1 << 20, _OUTPUT_POS)
        _OUTPUT_POS += len(data)
        return data.decode("utf-8", "replace")

    def do_close(self, twice=False, keep=False):
        """Close the receiver, then report what is left: threads and shared mappings (LIFE-5).

        With keep=True the closed receiver stays for `closed_calls` (LIFE-6).
        """
        self._stop_threads()
        rx = self.rx
        t0 = time.monotonic()
        rx.close()
        second = None
        if twice:
            try:
                rx.close()
            except Exception as e:  # noqa: BLE001
                second = f"{type(e).__name__}: {e}"
        elapsed = time.monotonic() - t0
        if keep:
            return {"elapsed": elapsed, "second_close": second}
        del rx
        return {"elapsed": elapsed, "second_close": second, **self._leftovers()}

    def _leftovers(self):
        deadline = time.monotonic() + 5.0
        while True:
            threads = [t.name for t in threading.enumerate() if t.ident not in self.baseline_threads and t.is_alive()]
            if not threads or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        # Weights stay readable after close (LIFE-6); only zero-copy views keep a mapping alive.
        self.rx = None
        gc.collect()
        left = shm_segments() - self.shm_before  # this receiver's: an earlier test's leftovers are not its own
        return {"threads": threads, "maps": sum(s.startswith("map") for s in left),
                "fds": sum(s.startswith("fd") for s in left), "segments": sorted(left)}

    def do_closed_calls(self):
        """What a closed receiver does for each call (LIFE-6)."""
        rx = self.rx
        out = {}
        for name, fn in (
            ("poll", lambda: rx.poll(0.0)),
            ("connect", lambda: rx.connect(0.1)),
            ("reading", lambda: rx.reading().__enter__()),
        ):
            try:
                fn()
                out[name] = None
            except Exception as e:  # noqa: BLE001
                out[name] = describe_error(self.ws, e)
        from .model import describe

        for name, fn in (("version", lambda: rx.version), ("stopped", lambda: rx.stopped),
                         ("weights", lambda: describe(rx.weights))):
            try:
                out[name] = ("value", fn())
            except Exception as e:  # noqa: BLE001
                out[name] = describe_error(self.ws, e)
        return out

    def do_exit(self, code=0):
        os._exit(code)


def _capture_output() -> None:
    """Send fds 1 and 2 to a file, so the suite can check that nothing is printed (API-6)."""
    import tempfile

    global _OUTPUT
    fd, path = tempfile.mkstemp(prefix="conformance-output-")
    os.unlink(path)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    _OUTPUT = fd


def main(impl: str, ctrl) -> None:
    """The worker process: import `impl`, then answer commands from `ctrl` until it closes."""
    _capture_output()
    try:
        ws = importlib.import_module(impl)
        server = Server(ws)
    except BaseException as e:  # noqa: BLE001
        ctrl.send(("err", RemoteError(type(e).__name__, (), f"cannot import {impl}: {e}")))
        return
    freeze_imports()  # each open() collects garbage before it counts shared memory (LIFE-5): not torch's objects
    ctrl.send(("ok", os.getpid()))
    while True:
        try:
            cmd, args, kwargs, scale = ctrl.recv()
        except (EOFError, OSError):
            os._exit(0)
        tm.set_scale(scale)  # the suite's current timescale (a re-check raises it)
        try:
            reply = ("ok", getattr(server, "do_" + cmd)(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - every failure goes back to the suite
            reply = ("err", describe_error(ws, e))
        try:
            ctrl.send(reply)
        except Exception as e:  # noqa: BLE001 - an unpicklable reply
            ctrl.send(("err", RemoteError(type(e).__name__, (), f"cannot send the reply to {cmd}: {e}")))
