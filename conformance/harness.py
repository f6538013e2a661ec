"""Receiver processes for the suite: spawned once, driven over a control pipe, every wait bounded.

Each worker process imports the implementation under test by name and runs a
small command loop around one `Receiver` at a time. The suite talks to it with
`Worker.call(cmd, ...)`, or `submit` + `result` when the test must do something
on the sender side before the worker can answer (connect). Workers are reused
across tests and Hypothesis examples; one that dies or stops answering is
replaced. Only the binding is used: `Receiver`, its public methods, the error
classes and `CAPABILITIES`.

Faults are made through the binding alone: a failing apply by giving a target
tensor another shape (ACK-7), a slow one by a mapping target whose reads pause.
A worker's stdout and stderr go to a file the suite reads, since an
implementation must print nothing (API-6).
"""

from __future__ import annotations

import gc
import importlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field

from .names import ERROR_NAMES
from .timing import BOUND, START_BOUND


class HarnessError(AssertionError):
    """A worker died or did not answer within its bound."""


@dataclass
class RemoteError:
    """An exception raised inside a worker, described with the binding's class names."""

    type: str
    kinds: tuple[str, ...]  # binding error classes it is an instance of
    message: str
    workers: list | None = None
    version: object = None
    details: dict = field(default_factory=dict)
    builtins: tuple[str, ...] = ()  # ValueError, TimeoutError, ... it is an instance of

    def isa(self, name: str) -> bool:
        return name in self.kinds or name in self.builtins or name == self.type

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


def shm_state() -> dict[str, int]:
    """Shared segments this process maps or holds open (memfd or /dev/shm), for leak checks."""
    maps, fds = set(), 0
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "/memfd:" in line or "/dev/shm/" in line:
                    parts = line.split()
                    maps.add(parts[4] if len(parts) > 4 else line)
    except OSError:  # pragma: no cover - not Linux
        pass
    try:
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith("/memfd:") or target.startswith("/dev/shm/"):
                fds += 1
    except OSError:  # pragma: no cover
        pass
    return {"maps": len(maps), "fds": fds}


def child_processes() -> dict[int, str]:
    """pid -> command line of this process's children (for "no process left after close")."""
    me, out = os.getpid(), {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid == me:
                with open(f"/proc/{d}/cmdline") as f:
                    out[int(d)] = f.read().replace("\0", " ").strip()
        except (OSError, ValueError, IndexError):
            continue
    return out


def new_threads(baseline: set[int]) -> list[str]:
    """Threads started since `baseline` (idents) that are not the suite's own or multiprocessing's."""
    out = []
    for t in threading.enumerate():
        if t.ident in baseline or not t.is_alive() or t.name.startswith("conformance-"):
            continue
        target = getattr(t, "_target", None)  # the fd-passing helper multiprocessing starts for handles
        if target is not None and getattr(target, "__module__", "") == "multiprocessing.resource_sharer":
            continue
        out.append(t.name)
    return out


def open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:  # pragma: no cover
        return -1


# ---- worker side ----------------------------------------------------------------


class ControlledMapping(Mapping):
    """A plain mapping target whose reads can pause on demand (a slow apply).

    ACK-7 makes every apply look at the target as it is at that moment, so any
    conforming implementation reads it during each apply; a pause there widens
    the window between taking a Receive and finishing its apply.
    """

    def __init__(self, tensors: dict):
        self._tensors = tensors
        self.pause = 0.0

    def _trip(self) -> None:
        if self.pause:
            time.sleep(self.pause)

    def __getitem__(self, key):
        self._trip()
        return self._tensors[key]

    def __iter__(self):
        self._trip()
        return iter(self._tensors)

    def __len__(self):
        return len(self._tensors)

    def items(self):
        self._trip()
        return self._tensors.items()


def build_target(torch, kind: str, spec):
    """(target, name -> tensor it holds) for a target of `kind` matching `spec` (API-3).

    Floating entries of a module are Parameters (requires_grad), as in a real policy;
    dotted names become nested modules or nested TensorDict keys.
    """
    tensors = {name: torch.zeros(shape, dtype=getattr(torch, dtype)) for name, dtype, shape in spec}
    if kind == "mapping":
        return ControlledMapping(tensors), tensors
    if kind == "module":
        root = torch.nn.Module()
        for name, t in tensors.items():
            *path, leaf = name.split(".")
            m = root
            for part in path:
                if not hasattr(m, part):
                    m.add_module(part, torch.nn.Module())
                m = getattr(m, part)
            if t.dtype.is_floating_point:
                p = torch.nn.Parameter(t)
                m.register_parameter(leaf, p)
                tensors[name] = p
            else:
                m.register_buffer(leaf, t)
        return root, tensors
    if kind == "tensordict":
        from tensordict import TensorDict

        td = TensorDict({}, batch_size=[])
        for name, t in tensors.items():
            td[tuple(name.split("."))] = t
        # TensorDict may store its own tensor object: fault injection must reach what it holds.
        return td, {name: td[tuple(name.split("."))] for name in tensors}
    raise ValueError(f"unknown target kind {kind!r}")


def _describe_error(ws, e: BaseException) -> RemoteError:
    kinds = tuple(n for n in ERROR_NAMES if isinstance(getattr(ws, n, None), type) and isinstance(e, getattr(ws, n)))
    builtins = tuple(c.__name__ for c in (ValueError, TypeError, TimeoutError, RuntimeError, OSError) if isinstance(e, c))
    details = getattr(e, "details", None)
    workers = getattr(e, "workers", None)
    return RemoteError(
        type(e).__name__,
        kinds,
        str(e) or traceback.format_exception_only(type(e), e)[-1].strip(),
        list(workers) if workers is not None else None,
        getattr(e, "version", None),
        {int(k): str(v) for k, v in details.items()} if isinstance(details, Mapping) else {},
        builtins,
    )


def _attempt(ws, fn):
    try:
        return ("value", fn())
    except Exception as e:  # noqa: BLE001 - every outcome is reported to the suite
        return ("error", _describe_error(ws, e))


#: A descriptor of the unlinked file that receives this worker's fds 1 and 2 (API-6), and
#: how much of it was reported.
_OUTPUT: int | None = None
_OUTPUT_POS = 0


class _Server:
    """The state of one worker process: one receiver at a time and its helper threads."""

    def __init__(self, ws):
        import torch

        self.ws = ws
        self.torch = torch
        self.rx = None
        self.target = None
        self.tensors: dict = {}
        self.spec: dict = {}
        self.saved = None  # the .data a "raise" fault took away
        self.readers: list[threading.Thread] = []
        self.reader_stop = threading.Event()
        self.observed: dict = {}
        self.reader_errors: list[str] = []
        self.reads = 0
        self.holder: threading.Thread | None = None
        self.hold_release = threading.Event()
        self.baseline_threads = {t.ident for t in threading.enumerate()}

    # -- helpers --
    def _read(self):
        from .model import describe

        return self.rx.version, describe(self.rx.weights)

    def _stop_threads(self) -> None:
        self.reader_stop.set()
        self.hold_release.set()
        for t in (*self.readers, self.holder):
            if t is not None:
                t.join(BOUND)
        self.holder = None
        self.readers = []

    # -- commands --
    def do_ping(self):
        return os.getpid()

    def do_open(self, handle, mode="push", zero_copy=False, target=None):
        """A new Receiver; `target` is None or (kind, spec) with kind mapping | module | tensordict."""
        self.do_discard()
        tgt = None
        if target is not None:
            tgt, self.tensors = build_target(self.torch, target[0], target[1])
            self.saved = None
            self.spec = {name: (dtype, tuple(shape)) for name, dtype, shape in target[1]}
            self.target = tgt
        self.rx = self.ws.Receiver(handle, tgt, mode=mode, zero_copy=zero_copy)
        self.mode = mode
        return None

    def do_discard(self):
        """Close the previous receiver, if any, ignoring its errors (between tests)."""
        self._stop_threads()
        if self.rx is not None:
            try:
                self.rx.close()
            except Exception:  # noqa: BLE001 - a broken implementation must not break the worker
                pass
        self.rx = None
        self.target = None
        return None

    def do_connect(self, timeout):
        return self.rx.connect(timeout)

    def do_snapshot(self, lock=True):
        if lock:
            with self.rx.reading():
                return self._read()
        return self._read()

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
        """
        if self.target is None:
            raise ValueError("fault needs a target")
        name = next(iter(self.tensors))
        t = self.tensors[name]
        dtype, shape = self.spec[name]
        torch = self.torch
        with torch.no_grad():
            if mode == "raise":
                if self.saved is None:
                    self.saved = t.data
                t.data = torch.zeros((*shape, 2), dtype=getattr(torch, dtype))
            elif mode is None:
                if self.saved is not None:  # the bytes it held: a failed apply wrote none (ACK-7)
                    t.data, self.saved = self.saved, None
                if isinstance(self.target, ControlledMapping):
                    self.target.pause = 0.0
            elif isinstance(mode, tuple) and mode[0] == "slow" and isinstance(self.target, ControlledMapping):
                self.target.pause = float(mode[1])
            else:
                raise ValueError(f"unknown fault {mode!r} for this target")
        return None

    def do_unwritable(self):
        """Give the target's first tensor one that matches the manifest but refuses in-place
        writes (made under inference_mode): applying into it fails for a reason other than
        a mismatch (INIT-6)."""
        if self.target is None:
            raise ValueError("unwritable needs a target")
        name = next(iter(self.tensors))
        t = self.tensors[name]
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

        rx, out = self.rx, {}
        for name in ("version", "stopped", "closed"):
            out[name] = _attempt(self.ws, lambda n=name: getattr(rx, n))
        out["failure"] = _attempt(self.ws, lambda: None if rx.failure is None else _describe_error(self.ws, rx.failure))
        if snapshot:
            closed = out["closed"] == ("value", True)

            def snap():
                if closed:
                    return rx.version, describe(rx.weights)
                with rx.reading():
                    return rx.version, describe(rx.weights)

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

    def do_reader_start(self, threads=1, pause=0.0005):
        """Read continuously inside reading(), fingerprinting what each read sees (CONS-1).

        With several threads and no pause the reads overlap, so some reader is
        always inside reading(): an apply must still get in (CONS-2).
        """
        from .model import describe, digest

        self.observed, self.reader_errors, self.reads = {}, [], 0
        self.reader_stop.clear()

        def loop():
            while not self.reader_stop.is_set():
                try:
                    with self.rx.reading():
                        v = self.rx.version
                        d = digest(describe(self.rx.weights))
                        v2 = self.rx.version
                    self.observed.setdefault((v, d), 0)
                    self.observed[(v, d)] += 1
                    if v != v2:
                        self.reader_errors.append(f"version changed inside reading(): {v} -> {v2}")
                    self.reads += 1
                except Exception as e:  # noqa: BLE001
                    self.reader_errors.append(f"{type(e).__name__}: {e}")
                    return
                time.sleep(pause)

        self.readers = [threading.Thread(target=loop, name="conformance-reader", daemon=True) for _ in range(threads)]
        for t in self.readers:
            t.start()
        return None

    def do_reader_stop(self):
        self.reader_stop.set()
        for t in self.readers:
            t.join(BOUND)
            if t.is_alive():
                self.reader_errors.append(f"reader still blocked in reading() after {BOUND} s")
        self.readers = []
        return {"observed": list(self.observed.items()), "errors": list(self.reader_errors), "reads": self.reads}

    def do_hold(self, seconds=None):
        """Enter reading() in a thread and stay there until release, or for `seconds` (CONS-2).

        On release the thread leaves reading() and enters it again at once, so
        `release(snapshot=True)` returns the first state a reader can see after
        the applies that waited for the hold (SLOT-2, ACK-3).
        """
        entered = threading.Event()
        self.hold_release.clear()
        self.after_hold = self.held = None

        def hold():
            from .model import describe, digest

            with self.rx.reading():
                before = (self.rx.version, digest(describe(self.rx.weights)))
                entered.set()
                self.hold_release.wait(BOUND * 4 if seconds is None else seconds)
                self.held = (before, (self.rx.version, digest(describe(self.rx.weights))))
            try:
                with self.rx.reading():
                    self.after_hold = ("ok", (self.rx.version, describe(self.rx.weights)))
            except Exception as e:  # noqa: BLE001
                self.after_hold = ("err", _describe_error(self.ws, e))

        self.holder = threading.Thread(target=hold, name="conformance-holder", daemon=True)
        self.holder.start()
        if not entered.wait(BOUND):
            raise TimeoutError("reading() did not open within the bound")
        return None

    def do_held(self):
        """What the last hold saw on entering and on leaving its reading() block (CONS-1)."""
        if self.holder is not None:
            self.holder.join(BOUND)
        return self.held

    def do_release(self, snapshot=False):
        self.hold_release.set()
        if self.holder is not None:
            self.holder.join(BOUND)
            if self.holder.is_alive():
                raise TimeoutError("the holder could not re-enter reading() within the bound")
        self.holder = None
        if snapshot:
            status, value = self.after_hold
            if status != "ok":
                raise RuntimeError(f"reading after the hold failed: {value}")
            return value
        return None

    def do_nested(self):
        """reading() inside reading() in one thread must not deadlock (CONS-2)."""
        out = {}

        def run():
            with self.rx.reading():
                with self.rx.reading():
                    out["v"] = self.rx.version

        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(5.0)
        if t.is_alive():
            raise TimeoutError("nested reading() deadlocked")
        return out["v"]

    def do_poll_inside_reading(self):
        with self.rx.reading():
            self.rx.poll(0.0)
        return None

    def do_zc_write(self):
        """Try to write into zero-copy weights (ZC-3): an error or a fault is the expected answer."""
        with self.rx.reading():
            t = next(iter(self.rx.weights.values()))
            with self.torch.no_grad():
                t.view(-1)[:1].fill_(1) if t.numel() else None
        return None

    def do_weights_api(self):
        """The receiver's weights form a read-only mapping of tensors (API-3)."""
        w = self.rx.weights
        out = {"mapping": isinstance(w, Mapping), "tensors": all(isinstance(t, self.torch.Tensor) for t in w.values())}
        try:
            w["__conformance__"] = self.torch.zeros(1)  # type: ignore[index]
            out["read_only"] = False
        except Exception:  # noqa: BLE001
            out["read_only"] = True
        return out

    def do_devices(self):
        """Name -> device of the receiver's weights (CUDA-1)."""
        with self.rx.reading():
            return {n: str(t.device) for n, t in self.rx.weights.items()}

    def do_mapping(self):
        """(device, inode, file offset) of the bytes a zero-copy weight views, from /proc/self/maps;
        None when they are not in a shared file mapping (LAYOUT-2)."""
        with self.rx.reading():
            t = next((t for t in self.rx.weights.values() if t.numel()), None)
            ptr = t.data_ptr() if t is not None else None
        if ptr is None or not os.path.exists("/proc/self/maps"):  # not Linux: copies cannot be told apart
            return None
        with open("/proc/self/maps") as f:
            for line in f:
                fields = line.split()
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                if lo <= ptr < hi:
                    inode = int(fields[4])
                    return None if inode == 0 else (fields[3], inode, int(fields[2], 16) + ptr - lo)
        return None

    def do_alignment(self):
        """Offsets modulo 64 of zero-copy views (LAYOUT-1)."""
        with self.rx.reading():
            return {n: t.data_ptr() % 64 for n, t in self.rx.weights.items() if t.numel()}

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
        return {"threads": threads, **shm_state()}

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
                out[name] = _describe_error(self.ws, e)
        from .model import describe

        for name, fn in (("version", lambda: rx.version), ("stopped", lambda: rx.stopped),
                         ("weights", lambda: describe(rx.weights))):
            try:
                out[name] = ("value", fn())
            except Exception as e:  # noqa: BLE001
                out[name] = _describe_error(self.ws, e)
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


def _main(impl: str, ctrl) -> None:
    _capture_output()
    try:
        ws = importlib.import_module(impl)
        server = _Server(ws)
    except BaseException as e:  # noqa: BLE001
        ctrl.send(("err", RemoteError(type(e).__name__, (), f"cannot import {impl}: {e}")))
        return
    ctrl.send(("ok", os.getpid()))
    while True:
        try:
            cmd, args, kwargs = ctrl.recv()
        except (EOFError, OSError):
            os._exit(0)
        try:
            reply = ("ok", getattr(server, "do_" + cmd)(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - every failure goes back to the suite
            reply = ("err", _describe_error(ws, e))
        try:
            ctrl.send(reply)
        except Exception as e:  # noqa: BLE001 - an unpicklable reply
            ctrl.send(("err", RemoteError(type(e).__name__, (), f"cannot send the reply to {cmd}: {e}")))


# ---- suite side ------------------------------------------------------------------


class Worker:
    """One receiver process and its control pipe."""

    def __init__(self, ctx, impl: str, index: int):
        self.impl = impl
        self.index = index
        self.ctrl, child = ctx.Pipe()
        self.proc = ctx.Process(target=_main, args=(impl, child), name=f"conformance-worker-{index}", daemon=True)
        self.proc.start()
        child.close()
        self.started = False
        self.waiting: str | None = None
        self.broken = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _ensure_started(self) -> None:
        if self.started:
            return
        status, value = self._recv(START_BOUND, "start")
        if status != "ok":
            self.broken = True
            raise HarnessError(f"worker {self.index} could not start: {value}")
        self.started = True

    def _recv(self, bound: float, what: str):
        try:
            ready = self.ctrl.poll(bound)
        except (OSError, EOFError):
            ready = True
        if not ready:
            self.broken = True
            raise HarnessError(f"worker {self.index} gave no answer to {what!r} within {bound} s")
        try:
            return self.ctrl.recv()
        except (EOFError, OSError) as e:
            self.broken = True
            code = self.proc.exitcode
            raise HarnessError(f"worker {self.index} died during {what!r} (exit code {code})") from e

    def submit(self, cmd: str, *args, **kwargs) -> None:
        self._ensure_started()
        if self.waiting is not None:
            raise HarnessError(f"worker {self.index}: {cmd!r} sent while {self.waiting!r} is unanswered")
        try:
            self.ctrl.send((cmd, args, kwargs))
        except (OSError, EOFError) as e:
            self.broken = True
            raise HarnessError(f"worker {self.index} is gone (exit code {self.proc.exitcode})") from e
        self.waiting = cmd

    def result(self, bound: float = BOUND):
        """The answer: ('ok', value) or ('err', RemoteError)."""
        what, self.waiting = self.waiting, None
        return self._recv(bound, what)

    def call(self, cmd: str, *args, bound: float = BOUND, **kwargs):
        """Run a command; return its value or raise RemoteFailure carrying the RemoteError."""
        self.submit(cmd, *args, **kwargs)
        status, value = self.result(bound)
        if status != "ok":
            raise RemoteFailure(value)
        return value

    def outcome(self, cmd: str, *args, bound: float = BOUND, **kwargs):
        self.submit(cmd, *args, **kwargs)
        return self.result(bound)

    def kill(self) -> None:
        """SIGKILL the process and wait (bounded) until it is gone."""
        if self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.join(BOUND)
        self.broken = True
        self.ctrl.close()

    def stop(self) -> None:
        try:
            self.ctrl.close()
        except OSError:
            pass
        self.proc.join(2.0)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(BOUND)


class RemoteFailure(AssertionError):
    def __init__(self, error: RemoteError):
        super().__init__(str(error))
        self.error = error


class Pool:
    """Worker processes for a session; a spare is started early so replacing one is quick."""

    def __init__(self, impl: str, size: int):
        self.impl = impl
        self.ctx = mp.get_context("spawn")
        self._count = 0
        self.workers = [self._new() for _ in range(size)]
        self.spare = self._new()

    def _new(self) -> Worker:
        self._count += 1
        return Worker(self.ctx, self.impl, self._count)

    def get(self, k: int) -> list[Worker]:
        """The first k workers, each with no receiver open; broken ones are replaced."""
        out = []
        for i in range(k):
            w = self.workers[i]
            if w.broken or not w.proc.is_alive():
                w = self.replace(w)
            else:
                try:
                    w.call("discard")
                except (HarnessError, RemoteFailure):
                    w = self.replace(w)
            out.append(w)
        return out

    def replace(self, w: Worker) -> Worker:
        """Kill `w` if it lives, put the spare in its place and start a new spare."""
        if w.proc.is_alive():
            w.kill()
        i = self.workers.index(w) if w in self.workers else None
        new, self.spare = self.spare, self._new()
        if i is not None:
            self.workers[i] = new
        return new

    def pids(self) -> set[int]:
        return {w.pid for w in [*self.workers, self.spare]}

    def close(self) -> None:
        for w in [*self.workers, self.spare]:
            w.stop()


def bounded(fn, *args, limit: float, what: str = "call", **kwargs):
    """Run a sender call in a thread; fail (not hang) if it has not returned after `limit` s."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001
            box["error"] = e

    t = threading.Thread(target=run, name="conformance-bounded", daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(limit)
    if t.is_alive():
        raise HarnessError(f"{what} did not return within {limit:.1f} s (every blocking call must honour its timeout)")
    box["elapsed"] = time.monotonic() - t0
    if "error" in box:
        raise box["error"]
    return box["value"]
