"""A sender in this process, receivers in worker processes, and the model beside them.

`Rig` drives the implementation only through the binding and checks each
outcome against `model.Model`; every failure message starts with the
requirement it breaks ("ACK-3 violated: ...").
"""

from __future__ import annotations

import os
import threading
import time

from . import timing as tm
from .bounds import HarnessError, bounded
from .model import LIVE, Model, describe, diff
from .names import RECEIVER_ERRORS, lacking
from .pool import RemoteFailure
from .targets import usable_kind
from .verdict import TooSlow, in_time

#: What `.causes` may say of a receiver (SEND-7).
CAUSES = ("error", "violation", "died", "timeout")


def spec_of(weights: dict) -> list:
    return [(n, str(t.dtype).removeprefix("torch."), tuple(t.shape)) for n, t in weights.items()]


class Rig:
    def __init__(
        self,
        ws,
        pool,
        weights: dict,
        n: int = 1,
        *,
        modes=None,
        targets="mapping",
        zero_copy=None,
        max_slots=None,
        devices=None,
        connect=True,
        source=None,
        listen=False,
    ):
        """`source` is the object the sender is built from (a module or TensorDict holding
        `weights`); by default the mapping `weights` itself. With `listen`, the sender listens
        on an abstract address and the workers join with `sender.url(i)` (RDV-*); with
        listen="tcp", on 127.0.0.1 over TCP (NET-*)."""
        self.ws, self.pool, self.n = ws, pool, n
        self.weights = weights
        self.modes = list(modes or ["push"] * n)
        self.zero_copy = list(zero_copy or [False] * n)
        if isinstance(targets, str) or targets is None:
            targets = [targets] * n
        # A target kind (mapping | module | tensordict) gets a target matching the weights; "mapping", the default,
        # becomes a kind the binding takes when it takes no mapping (targets.usable_kind).
        import torch  # here, not at import: a program's run imports no torch

        spec = spec_of(weights)
        targets = [usable_kind(torch, ws.CAPABILITIES, t, spec) if isinstance(t, str) else t for t in targets]
        self.targets = [
            None if t is None or (self.zero_copy[i] and t != "module") else (t, spec) if isinstance(t, str) else t
            for i, t in enumerate(targets)
        ]
        kwargs = {} if max_slots is None else {"max_slots": max_slots}
        if devices is not None:
            kwargs["devices"] = devices
        #: Receivers whose worker keeps referencing the handle after the Receiver is made (as a Process argument).
        self.keep_handles: set[int] = set()
        self.listen = bool(listen)
        if listen == "tcp":  # the network profile (NET-*)
            kwargs["listen"] = "tcp://127.0.0.1:0"
        elif self.listen:
            Rig._count += 1
            kwargs["listen"] = f"unix:@conformance-rig-{os.getpid()}-{Rig._count}"
        self._lacking(ws, listen)
        self.sender = ws.Sender(weights if source is None else source, n, **kwargs)
        self.model = Model(describe(weights), n)
        self.workers = pool.get(n)
        if connect:
            self.connect(range(n) if connect is True else connect)

    def _lacking(self, ws, listen) -> None:
        """What this rig uses that the binding does not declare makes the test not implemented (names.lacking):
        the rig, not each test's marks, knows which modes, targets and listeners it asks for."""
        for mode in sorted(set(self.modes)):
            lacking(ws, mode)
        if any(self.zero_copy):
            lacking(ws, "zero_copy")
        for t in self.targets:
            if isinstance(t, tuple) and t[0] in ("module", "tensordict", "mapping"):
                lacking(ws, t[0])
        if listen:
            lacking(ws, "rendezvous")
            if listen == "tcp":
                lacking(ws, "network")

    # ---- connecting -------------------------------------------------------------

    _count = 0

    def open(self, i: int, handle=None) -> None:
        h = handle if handle is not None else self.sender.url(i) if self.listen else self.sender.handle(i)
        if self.zero_copy[i]:  # every zero-copy receiver first meets a target it must refuse (ZC-1)
            refused = self.workers[i].call("zero_copy_refusals", h, spec_of(self.weights))
            wrong = {k: v for k, v in refused.items() if v != "ValueError"}
            assert not wrong, f"ZC-1 violated: Receiver(..., zero_copy=True) with a {', '.join(wrong)} target gave {wrong}"
            h = None  # the worker keeps the handle it was given: one handle crosses to one process once (CON-3)
        keep = {"keep_handle": True} if i in self.keep_handles else {}
        self.workers[i].call("open", h, self.modes[i], self.zero_copy[i], self.targets[i], **keep)
        self.model.peers[i].local = "new"

    def connect(self, ids, timeout: float | None = None, handles=None):
        """Handshake with `ids` on both sides; checks INIT-4 and LIFE-1 for each.

        Both sides must complete within the timeout: a timeout of either is a matter of time
        (TooSlow, re-checked at a larger timescale), any other error a violation of INIT-4."""
        ids = list(ids)
        timeout = tm.T if timeout is None else timeout
        for i in ids:
            self.open(i, (handles or {}).get(i))
            self.workers[i].submit("connect", timeout)
        err = None
        t0 = time.monotonic()
        try:
            bounded(self.sender.connect, timeout, workers=ids, limit=timeout + tm.SLACK, what="sender.connect")
        except BaseException as e:  # noqa: BLE001 - judged once the workers answered
            err = e
        outs, answers = {}, []
        for i in ids:  # what each worker's own connect() did tells a slow start from a lost Ready
            status, value = outs[i] = self.workers[i].result(timeout + tm.SLACK)
            did = f"returned {value!r}" if status == "ok" else f"raised {value}"
            answers.append(f"receiver {i}'s connect() {did} (answer read {time.monotonic() - t0:.1f} s after connect began)")
        if isinstance(err, self.ws.SyncTimeoutError):
            raise TooSlow(f"INIT-4 violated: sender.connect({timeout:.1f}) of healthy receivers {ids} timed out: {err} "
                          f"({'; '.join(answers)})")
        if isinstance(err, Exception):
            raise AssertionError(f"INIT-4 violated: sender.connect of healthy receivers {ids} raised "
                                 f"{type(err).__name__}: {err}") from err
        if err is not None:
            raise err
        for i, (status, value) in outs.items():
            if status != "ok" and value.isa("SyncTimeoutError"):
                raise TooSlow(f"INIT-4 violated: receiver {i}: connect({timeout:.1f}) timed out: {value}")
            assert status == "ok", f"INIT-4 violated: receiver {i}: connect() raised {value}"
            assert value == self.model.version, (
                f"LIFE-1 violated: receiver {i} connected at version {value}; the latest published is {self.model.version}"
            )
            self.model.connected(i, value, self.modes[i])
        return {i: v for i, (_, v) in outs.items()}

    def restart(self, i: int, timeout: float | None = None):
        """A new process for receiver i after it failed or is gone (LIFE-2)."""
        w = self.workers[i]
        if w.broken or not w.proc.is_alive():
            self.workers[i] = self.pool.replace(w)
        self.model.reset(i)
        if self.listen:  # a new process joins with the same URL (RDV-5)
            return self.connect([i], timeout)
        # The sender learns that i is gone from its end of channel (CON-1); give that a moment.
        deadline = time.monotonic() + tm.SLACK
        while True:
            try:
                handle = self.sender.handle(i)
                break
            except self.ws.ProtocolError:
                in_time(time.monotonic() <= deadline,
                        f"LIFE-2 violated: handle({i}) still refused {tm.SLACK} s after receiver {i} went away")
                time.sleep(0.05)
        return self.connect([i], timeout, handles={i: handle})

    # ---- sending ------------------------------------------------------------------

    def targets_of(self, workers) -> list[int]:
        return list(range(self.n)) if workers is None else list(workers)

    def send(self, weights=None, workers=None, timeout: float | None = None) -> int:
        """A sync send expected to succeed (SEND-1); the model records the acks."""
        desc = describe(self.weights if weights is None else weights)
        timeout = tm.T if timeout is None else timeout
        try:
            v = bounded(self.sender.send, weights, workers=workers, timeout=timeout, limit=timeout + tm.SLACK, what="send")
        except HarnessError as e:
            raise TooSlow(f"SEND-2 violated: {e}") from None
        except self.ws.SyncTimeoutError as e:
            raise TooSlow(f"SEND-1 violated: send to {self.targets_of(workers)} (all connected and healthy) timed "
                          f"out after {timeout:.1f} s: {e}") from None
        except Exception as e:
            raise AssertionError(
                f"SEND-1, ACK-1 violated: send to {self.targets_of(workers)} (all connected and healthy) raised "
                f"{type(e).__name__}: {e}"
            ) from e
        assert v == self.model.version + 1, (
            f"VER-1 violated: send returned version {v}, expected {self.model.version + 1}"
        )
        self.model.publish(desc, self.targets_of(workers))
        for i in self.targets_of(workers):
            self.model.acked(i, v)
        assert self.sender.version == v, f"VER-1 violated: sender.version is {self.sender.version} after send returned {v}"
        return v

    def send_async(self, weights=None, workers=None, timeout: float | None = None):
        desc = describe(self.weights if weights is None else weights)
        timeout = tm.T if timeout is None else timeout
        try:
            f = bounded(self.sender.send_async, weights, workers=workers, timeout=timeout, limit=timeout + tm.SLACK,
                        what="send_async")
        except HarnessError as e:
            raise TooSlow(f"SEND-5 violated: {e}") from None
        except self.ws.SyncTimeoutError as e:
            raise TooSlow(f"SLOT-3 violated: send_async to {self.targets_of(workers)} found no free slot in "
                          f"{timeout:.1f} s with every earlier version answered: {e}") from None
        except Exception as e:
            raise AssertionError(f"SEND-5 violated: send_async to {self.targets_of(workers)} (all connected and "
                                 f"healthy) raised {type(e).__name__}: {e}") from e
        v = self.model.publish(desc, self.targets_of(workers))
        assert f.version == v, f"VER-1 violated: send_async published version {f.version}, expected {v}"
        assert self.sender.version == v, (
            f"SEND-5 violated: sender.version is {self.sender.version} after send_async returned (published {v})"
        )
        return f

    def poll(self, i: int, timeout: float = 0.0):
        v = self.workers[i].call("poll", timeout, bound=timeout + tm.BOUND)
        p = self.model.peers[i]
        if v is not None:
            assert v in p.pending, (
                f"ACK-1 violated: receiver {i}'s poll() applied version {v}; pending for it: {sorted(p.pending)}"
            )
            self.model.acked(i, v)
        return v

    def polled(self, i: int, expected: int, ids: str, timeout: float | None = None) -> int:
        """Receiver i's poll(timeout) applies `expected` (the newest pending version). Nothing
        arriving within the timeout is a matter of time; anything else a violation of `ids`."""
        timeout = tm.T if timeout is None else timeout
        try:
            v = self.poll(i, timeout)
        except RemoteFailure as e:
            raise AssertionError(f"{ids} violated: receiver {i}'s poll({timeout:.1f}) raised {e.error}") from None
        in_time(v is not None, f"{ids} violated: receiver {i}'s poll({timeout:.1f}) found nothing; version "
                               f"{expected} was sent to it")
        assert v == expected, f"{ids} violated: receiver {i}'s poll() applied {v}, expected {expected}"
        return v

    # ---- checking -----------------------------------------------------------------

    def live(self) -> list[int]:
        return [p.id for p in self.model.peers if p.state == LIVE]

    def check(self, ids=None) -> None:
        """Every live receiver shows a version the model allows, with exactly its bytes (ACK-3)."""
        for i in self.live() if ids is None else ids:
            v, d, held = self.workers[i].call("snapshot", with_target=True)
            msg = self.model.check_snapshot(i, v, d)
            assert msg is None, msg
            assert held is None or v is None or held == d, (
                f"ACK-3 violated: receiver {i} reports version {v}, but its target object holds other bytes: "
                f"{diff(d, held)}"
            )

    def teardown(self) -> None:
        try:
            bounded(self.sender.close, limit=tm.REACTION + tm.SLACK, what="sender.close() in the rig's teardown")
        except HarnessError as e:
            raise TooSlow(f"LIFE-4 violated (API-7): {e}") from None
        except Exception:  # noqa: BLE001 - a test already reported what went wrong
            pass
        for w in self.workers:
            if not w.broken and w.waiting is not None:
                try:
                    w.result(tm.T)
                except HarnessError:
                    pass


class Background:
    """`fn()` in a daemon thread of its own: `outcome` is ("ok", value) or ("err", exception) once it
    returned, None until then; `join(seconds)` waits at most that long and gives the outcome."""

    def __init__(self, fn, name: str = "conformance-background"):
        self.outcome: tuple | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), name=name, daemon=True)
        self._thread.start()

    def _run(self, fn) -> None:
        try:
            self.outcome = ("ok", fn())
        except Exception as e:  # noqa: BLE001 - the test judges it
            self.outcome = ("err", e)

    def join(self, seconds: float) -> tuple | None:
        self._thread.join(seconds)
        return self.outcome


def connect_here(ws, sender, receivers, what: str = "healthy receivers in this process", *,
                 refusal: str | None = None) -> None:
    """Connects `receivers`, made in this process, each connect() in a thread of its own, while `sender.connect()`
    runs here: each must connect at version 0 within the bound (INIT-4). A timeout is a matter of time (TooSlow);
    the caller closes both ends whatever happens. `refusal` names the requirement a refused handshake breaks
    (sender.connect raising a WeightSyncError, or a receiver connecting otherwise), when the test asked for a
    handshake that requirement says must succeed."""
    box: dict = {}
    threads = [threading.Thread(target=lambda k=k, r=r: box.setdefault(k, r.connect(tm.T)), daemon=True)
               for k, r in enumerate(receivers)]  # by position: `id` is not a name the binding requires
    for t in threads:
        t.start()
    try:
        bounded(sender.connect, tm.T, limit=tm.T + tm.SLACK, what="sender.connect")
    except (HarnessError, ws.SyncTimeoutError) as e:
        raise TooSlow(f"INIT-4 violated: {what} did not connect: {e}") from None
    except ws.WeightSyncError as e:
        if refusal is None:
            raise
        raise AssertionError(f"{refusal} violated: {what} failed the handshake: {type(e).__name__}: {e}") from None
    for t in threads:
        t.join(tm.T + tm.SLACK)
    in_time(not any(t.is_alive() for t in threads),
            f"INIT-4 violated: receiver.connect() of {what} did not return within {tm.T + tm.SLACK:.0f} s")
    assert box == dict.fromkeys(range(len(receivers)), 0), (
        f"{refusal or 'INIT-4'} violated: {what} connected with {box} (version 0 expected; by position in the list)")


def pair(ws, weights, target, mode: str = "push", **sender_options):
    """A sender of `weights` and one connected receiver in `mode` into `target` (None: its own), in this process."""
    sender = ws.Sender(weights, 1, **sender_options)
    receiver = ws.Receiver(sender.handle(0), target, **({} if mode == "push" else {"mode": mode}))
    try:
        connect_here(ws, sender, [receiver], f"a healthy {mode} receiver")
    except BaseException:
        receiver.close()
        sender.close()
        raise
    return sender, receiver


def readers_held_back(ws, receiver, within: float) -> bool:
    """Whether, within `within` s, a reading(timeout) in this thread is held back (SyncTimeoutError): an apply (or a
    poll) is then seen waiting for a block another thread holds open, since a waiting apply holds new blocks back
    (CONS-2). A probe that goes in is tried again."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            with receiver.reading(min(0.05 * tm.SCALE, tm.SHORT)):
                pass
        except ws.SyncTimeoutError:
            return True
        time.sleep(0.01)  # not a verdict: the probe is tried again
    return False


def expect_error(ws, cls: str, fn, *args, ids: str, what: str, limit: float | None = None, naming=None, **kwargs):
    """Run fn; it must raise ws.<cls> within `limit` s, naming the receivers `naming` if given. Returns the error.

    Raising late, or a SyncTimeoutError where another error was due (its cause came after
    the timeout), is a matter of time (TooSlow); every receiver error is checked with
    `check_receiver_error` (API-4)."""
    limit = tm.T + tm.SLACK if limit is None else limit
    t0 = time.monotonic()
    try:
        value = bounded(fn, *args, limit=limit, what=what, **kwargs)
    except HarnessError as e:
        raise TooSlow(f"{ids} violated: {e}") from None
    except getattr(ws, cls) as e:
        elapsed = time.monotonic() - t0
        in_time(elapsed <= limit, f"{ids} violated: {what} raised {cls} only after {elapsed:.1f} s")
        check_receiver_error(ws, e, what)
        if naming is not None:
            got = list(getattr(e, "workers", []) or [])
            assert got == sorted(naming), f"{ids} violated: {what} raised {cls} naming receivers {got}, expected {sorted(naming)}"
        return e
    except Exception as e:  # noqa: BLE001
        if isinstance(e, ws.SyncTimeoutError):
            raise TooSlow(f"{ids} violated: {what} timed out ({e}); expected {cls} before its timeout") from None
        raise AssertionError(f"{ids} violated: {what} raised {type(e).__name__}: {e}; expected {cls}") from None
    raise AssertionError(f"{ids} violated: {what} returned {value!r}; expected it to raise {cls}")


def refused(fn, *args, ids: str, what: str, expected: str = "", **kwargs) -> ValueError:
    """fn(*args, **kwargs) raises ValueError: a bad argument is refused when given, before anything starts
    (API-1, API-3). Whatever it returned instead is closed; the error is returned for further checks."""
    try:
        made = fn(*args, **kwargs)
    except ValueError as e:
        return e
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"{ids} violated: {what} raised {type(e).__name__}: {e}, not ValueError") from None
    if callable(close := getattr(made, "close", None)):
        close()
    raise AssertionError(f"{ids} violated: {what} was accepted" + (f"; {expected}" if expected else ""))


def waited(future, ids: str, *, timeout: float | None = None, version: int | None = None,
           what: str = "future.wait()") -> int:
    """future.wait(timeout) returns `version` (the future's own by default) within its timeout (SEND-5).

    A SyncTimeoutError (a TimeoutError, API-4) is a matter of time; any other error, or
    another value, a violation of `ids`."""
    timeout = tm.T if timeout is None else timeout
    want = future.version if version is None else version
    try:
        v = bounded(future.wait, timeout, limit=timeout + tm.SLACK, what=what)
    except HarnessError as e:
        raise TooSlow(f"{ids} violated: {e}") from None
    except TimeoutError as e:
        raise TooSlow(f"{ids} violated: {what} timed out after {timeout:.1f} s: {e}") from None
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"{ids} violated: {what} raised {type(e).__name__}: {e}; expected {want}") from None
    assert v == want, f"{ids} violated: {what} returned {v!r}, expected {want}"
    return v


def check_receiver_error(ws, e, what: str) -> list[int]:
    """The fields every receiver error carries (API-4, SEND-7): `.workers` sorted distinct ids,
    `.version` an int or None, `.details` and `.causes` for exactly the named receivers, each
    cause one of four and the error an instance of each cause's class. Returns `.workers`."""
    if not any(isinstance(e, getattr(ws, c)) for c in RECEIVER_ERRORS):
        return []
    got = getattr(e, "workers", None)
    assert isinstance(got, list) and got and all(type(i) is int for i in got) and got == sorted(set(got)), (
        f"API-4 violated: {what}: {type(e).__name__}.workers is {got!r}; a list of distinct receiver ids in "
        "ascending order"
    )
    version = getattr(e, "version", "missing")
    assert version is None or type(version) is int, f"API-4 violated: {what}: .version is {version!r}"
    details = getattr(e, "details", None)
    assert isinstance(details, dict) and set(details) <= set(got) and all(isinstance(v, str) for v in details.values()), (
        f"API-4 violated: {what}: .details {details!r} must map named receivers to text"
    )
    causes = getattr(e, "causes", None)
    assert isinstance(causes, dict) and set(causes) == set(got) and set(causes.values()) <= set(CAUSES), (
        f"SEND-7 violated: {what}: .causes {causes!r} must give each named receiver {got} one of {CAUSES}"
    )
    for kind in set(causes.values()):
        want = CAUSE_CLASS[kind]
        assert isinstance(e, getattr(ws, want)), (
            f"SEND-7 violated: {what}: a receiver failed with cause {kind!r}, but the error is no {want}"
        )
    return got


#: The class an error must be an instance of for each cause it names (SEND-7).
CAUSE_CLASS = {"error": "ReceiverError", "violation": "ReceiverError", "died": "ReceiverDiedError",
               "timeout": "SyncTimeoutError"}


def expect_remote_ok(outcome, *, ids: str, what: str):
    """A worker's (status, value) answer must be a value; a SyncTimeoutError is a matter of time."""
    status, value = outcome
    if status != "ok" and value.isa("SyncTimeoutError"):
        raise TooSlow(f"{ids} violated: {what} timed out: {value}")
    assert status == "ok", f"{ids} violated: {what} raised {value}"
    return value


def expect_remote_error(outcome, ws_cls: str, *, ids: str, what: str):
    """A worker's (status, value) answer must be an error of class `ws_cls`."""
    status, value = outcome
    assert status == "err", f"{ids} violated: {what} returned {value!r}; expected {ws_cls}"
    assert value.isa(ws_cls), f"{ids} violated: {what} raised {value}; expected {ws_cls}"
    return value


__all__ = ["Rig", "check_receiver_error", "expect_error", "expect_remote_ok", "waited", "expect_remote_error", "RemoteFailure", "spec_of"]
