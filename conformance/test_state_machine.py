"""The whole binding as a Hypothesis state machine over real receiver processes.

One sender (built from a mapping, a module or a TensorDict) and three receivers
(push or pull, copy or zero-copy, into no target, a mapping, a module or a
TensorDict, each in its own worker process) are driven through every public
call: sends of fresh or in-place-updated weights to all or some receivers, with
pull receivers polling or silent; async sends and waits; polls; failing applies;
readers holding `reading()`; SIGKILL; receiver close and its use afterwards;
bad weights, bad `workers` and negative timeouts; late join, restart, handle
misuse; sender close and its use afterwards.

After every step the model predicts, and the machine checks, everything the
binding shows: the sender's `version` and `closed`; each future's `version`,
`workers` and `done()`; each receiver's `version`, `stopped`, `closed`,
`failure`, its weights bit for bit, and that its process printed nothing. Each
call's result or error class and every field of that error (`workers`,
`version`, `details`) is compared with the model, and how long the call took
with the timeout it was given. Outcomes that concern a receiver's earlier
incarnation are never applied to a restarted one.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from dataclasses import dataclass, field

import pytest
import torch
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from . import strategies as S
from . import timing as tm
from .bounds import HarnessError, bounded
from .conftest import not_checked, replay_note, reproduce_command
from .model import GONE, LIVE, UNCONNECTED, describe, diff, misnamed
from .names import RECEIVER_ERRORS, STATE_MACHINE_RULES, rules_off
from .pool import RemoteFailure
from .probes import child_processes, new_threads, shm_segments
from .rig import Rig, check_receiver_error, spec_of
from .targets import build_target
from .targets import nestable as _nestable
from .verdict import TooSlow, in_time

N = 3
#: close_sender becomes possible only after this many steps, so that examples do something first.
CLOSE_AFTER = 8
#: Timeout of a pull receiver's poll while a sync send to it runs.
def poll_wait() -> float:
    return 5.0 * (tm.T / 10.0)


@dataclass
class Pending:
    """A future the machine has not waited on yet, and what the model knew when it was made."""

    future: object
    version: int
    targets: list[int]
    epochs: dict[int, int]
    failing: set[int]
    #: Targets (of their publish-time incarnation) known to have answered with an ok ack ...
    answered: set[int] = field(default_factory=set)
    #: ... and those of them whose ack the sender has certainly read (a later send returned).
    read: set[int] = field(default_factory=set)
    #: Targets whose apply of it (or of a later version) failed: they answered with an error.
    errored: set[int] = field(default_factory=set)
    done_seen: bool = False


def nestable(spec) -> bool:
    return _nestable(torch, spec)



class Protocol(RuleBasedStateMachine):
    ws = None
    pool = None

    def __init__(self):
        super().__init__()
        self.rig: Rig | None = None
        self.faulty: set[int] = set()
        self.held: set[int] = set()
        self.futures: list[Pending] = []
        self.readers: set[int] = set()
        self.kills = 0
        self.drops = 0
        self.steps = 0
        self.closed = False
        self.probed = False

    # ---- setup ------------------------------------------------------------------------

    #: Examples begun in this process (the soak reports how many it ran).
    examples = 0

    @initialize(spec=S.specs(max_size=4), first=st.integers(1, N), data=st.data())
    def setup(self, spec, first, data):
        Protocol.examples += 1
        caps = self.ws.CAPABILITIES
        self.spec = spec
        modes_ok = [m for m in ("push", "pull") if m in caps]
        kinds = ["mapping"]
        if nestable(spec):
            kinds += [k for k in ("module", "tensordict") if k in caps]
        self.kind = data.draw(st.sampled_from(kinds), label="sender weights kind")
        modes, zero_copy, targets = [], [], []
        for i in range(N):
            modes.append(data.draw(st.sampled_from(modes_ok), label=f"mode {i}"))
            zc = "zero_copy" in caps and data.draw(st.booleans(), label=f"zero_copy {i}")
            zero_copy.append(zc)
            options = [None, *(["module"] if "module" in kinds else [])] if zc else \
                [None, *(k for k in kinds if k != "mapping" or "mapping" in caps)]  # a target kind it takes
            targets.append(data.draw(st.sampled_from(options), label=f"target {i}"))
        self.shm_before = shm_segments()
        self.threads_before = {t.ident for t in threading.enumerate()}
        w0 = data.draw(S.weights_for(spec), label="initial weights")
        source, self.source_tensors = build_target(torch, self.kind, spec_of(w0))
        if self.kind == "mapping":
            source = dict(self.source_tensors)  # a plain dict holding the same tensors
        self._fill_source(w0)
        self.rig = Rig(self.ws, self.pool, w0, N, modes=modes, zero_copy=zero_copy, targets=targets, source=source,
                       connect=list(range(first)))
        note(f"kind={self.kind} modes={modes} zero_copy={zero_copy} targets={targets} connected={list(range(first))}")

    def _fill_source(self, w):
        with torch.no_grad():
            for n, t in self.source_tensors.items():
                t.copy_(w[n])

    # ---- helpers ------------------------------------------------------------------------

    @property
    def model(self):
        return self.rig.model

    @property
    def sender(self):
        return self.rig.sender

    def _targets(self, workers):
        return list(range(N)) if workers is None else list(workers)

    def _ids(self, pred) -> list[int]:
        return [p.id for p in self.model.peers if pred(p)] if self.rig is not None and not self.closed else []

    def _live(self):
        return self._ids(lambda p: p.state == LIVE)

    def _quiet(self) -> bool:
        """No version is in flight anywhere (faults may only change then)."""
        return not self.futures and not any(p.pending for p in self.model.peers if p.state == LIVE)

    def _faultable(self):
        if not self._quiet():
            return []
        return self._ids(lambda p: p.state == LIVE and p.id not in self.readers and p.id not in self.held
                         and self.rig.targets[p.id] is not None and not self.rig.zero_copy[p.id])

    def _holdable(self):
        return self._ids(lambda p: p.state == LIVE and p.mode == "push" and p.id not in self.faulty
                         and p.id not in self.readers)

    def _timed(self, fn, *args, what, within, **kwargs):
        """Run a sender call that must end within `within` + SLACK s; returns (value, error, elapsed)."""
        t0 = time.monotonic()
        try:
            value = bounded(fn, *args, limit=within + tm.SLACK, what=what, **kwargs)
            return value, None, time.monotonic() - t0
        except HarnessError as e:
            raise TooSlow(f"API-2 violated: {e}") from None
        except Exception as e:  # noqa: BLE001 - judged by the caller
            return None, e, time.monotonic() - t0

    def _is(self, e, cls: str) -> bool:
        return isinstance(e, getattr(self.ws, cls))

    def _check_fields(self, e, cls: str, ids: str, what: str, *, workers_within=None, workers_include=(),
                      version="any"):
        """`e` is a ws.<cls> whose .workers, .version, .details and .causes are what the spec says (API-4, 8.4).

        A SyncTimeoutError where another error was due is a matter of time (its cause came late)."""
        if cls != "SyncTimeoutError" and self._is(e, "SyncTimeoutError") and not self._is(e, cls):
            raise TooSlow(f"{ids} violated: {what} timed out ({e}); expected {cls} before its timeout")
        assert self._is(e, cls), f"{ids} violated: {what} raised {type(e).__name__}: {e}; expected {cls}"
        got = check_receiver_error(self.ws, e, what)
        if workers_within is not None:
            assert set(got) <= set(workers_within), (
                f"{ids} violated: {what}: {cls} names receivers {got}; only {sorted(workers_within)} may be named"
            )
        assert set(workers_include) <= set(got), (
            f"{ids} violated: {what}: {cls} names {got}, but must name {sorted(workers_include)}"
        )
        if version != "any":
            assert e.version == version, f"{ids} violated: {what}: {cls}.version is {e.version!r}, expected {version!r}"
        details = e.details
        if cls == "ReceiverError":
            assert set(details) == set(got) and all(isinstance(v, str) and v for v in details.values()), (
                f"ACK-6 violated: {what}: ReceiverError.details {details!r} must give each named receiver's reason"
            )
        return got

    def _check_causes(self, e, ids: str, what: str, at_fault: dict[str, set[int]], *, must=(), version="any"):
        """`e` names receivers (API-4), each with a cause it is at fault for (`at_fault`: cause -> ids), every one
        of `must` among them; returns `.workers`. An error may carry several causes (SEND-7): the class of each
        is checked by check_receiver_error, and each receiver is judged by its own cause."""
        assert any(self._is(e, c) for c in RECEIVER_ERRORS), (
            f"{ids} violated: {what} raised {type(e).__name__}: {e}; expected an error naming receivers (SEND-7)"
        )
        got = check_receiver_error(self.ws, e, what)
        wrong = misnamed(e.causes, at_fault)
        assert not wrong, (
            f"{ids} violated: {what}: {type(e).__name__} names {', '.join(f'{i} as {c}' for i, c in sorted(wrong.items()))}"
            f"; at fault: {', '.join(f'{c} {sorted(v)}' for c, v in sorted(at_fault.items()) if v) or 'none'}"
        )
        assert set(must) <= set(got), f"{ids} violated: {what}: {type(e).__name__} names {got}, but must name {sorted(must)}"
        if version != "any":
            assert e.version == version, f"{ids} violated: {what}: .version is {e.version!r}, expected {version!r}"
        if self._is(e, "ReceiverError"):
            failed = sorted(i for i in got if e.causes[i] in ("error", "violation"))
            assert set(failed) <= set(e.details) and all(e.details[i] for i in failed), (
                f"ACK-6 violated: {what}: .details {e.details!r} must give the reason of each failed receiver {failed}"
            )
        return got

    def _expect_refusal(self, fn, targets, what, desc):
        """A send to targets that are not live: refused before publishing (SEND-4, VER-2, 8.4).

        Unless every such target went away (killed, closed) and the sender has not shown yet that it
        knows: it may not have read that end of channel, so publishing and failing the version as a
        death (SEND-3) is as right as refusing. A future of send_async then carries it."""
        bad = self.model.unusable(targets)
        unseen = {i for i, s in bad.items() if s == GONE and not self.model.peers[i].seen_gone}
        before = self.sender.version
        value, e, _ = self._timed(fn, what=what, within=tm.T)
        if self.sender.version == before + 1 and set(bad) == unseen:
            note(f"{what} published before the sender saw {sorted(unseen)} gone (SEND-3)")
            live = [i for i in targets if i not in bad]
            v = self.model.publish(desc, live)
            if what == "send_async":
                assert e is None, f"SEND-5 violated: send_async published {v} and raised {type(e).__name__}: {e}"
                self.futures.append(Pending(value, v, targets, self.model.epochs(targets), set(live) & self.faulty))
                return
            assert self._is(e, "ReceiverDiedError"), (
                f"SEND-3 violated: {what} published {v} to {sorted(unseen)}, gone, and raised {type(e).__name__}: {e}"
            )
            named = self._check_causes(e, "SEND-3", f"{what} to {sorted(unseen)}, gone",
                                       {"died": unseen, "error": set(live) & self.faulty, "timeout": set(live)},
                                       version=v)
            self.model.seen_dead(i for i in named if e.causes.get(i) == "died")
            for i in set(named) & set(live):
                if e.causes.get(i) == "error":
                    self.model.failed_apply(i, v)
            return
        assert e is not None, f"SEND-4 violated: {what} to unusable receivers {bad} succeeded"
        by_class = {"ReceiverDiedError": {i for i, s in bad.items() if s == GONE},
                    "ProtocolError": {i for i, s in bad.items() if s == UNCONNECTED}}
        cls = next((c for c in ("ReceiverDiedError", "ReceiverError", "ProtocolError") if self._is(e, c)), None)
        dropped = sorted(i for i in bad if self.model.peers[i].dropped)
        assert cls is not None and by_class.get(cls), (
            f"{'API-9' if dropped and cls != 'ReceiverDiedError' else 'SEND-4'} violated: {what} to receivers in "
            f"states {bad}{f' (dropped: {dropped}, as if they had died)' if dropped else ''} raised "
            f"{type(e).__name__}: {e}"
        )
        if cls == "ReceiverDiedError":
            named = self._check_fields(e, cls, "SEND-4", what, workers_within=by_class[cls],
                                       workers_include=by_class[cls] - unseen, version=None)
            self.model.seen_dead(named)
        assert self.sender.version == before, (
            f"VER-2 violated: {what} refused for {bad} moved the version {before} -> {self.sender.version}"
        )

    def _poll_failed(self, i, err, pending):
        """A pull receiver's poll() raised: only a failing apply may do that (ACK-6, API-3)."""
        assert i in self.faulty and pending and err.isa("ReceiverError"), f"ACK-6 violated: poll() raised {err}"
        assert err.workers == [i] and err.version in pending, (
            f"ACK-6 violated: receiver {i}'s poll() raised ReceiverError naming {err.workers} for version "
            f"{err.version}; expected [{i}] and a pending version of {sorted(pending)}"
        )
        self.model.failed_apply(i, err.version)
        for p in self.futures:
            if i in p.targets and p.version <= err.version and self.model.same(i, p.epochs[i]):
                p.errored.add(i)

    def _drain(self, i):
        """Poll a pull receiver until nothing is pending (its acks answer older sends, ACK-2)."""
        while self.model.peers[i].pending:
            pending = set(self.model.peers[i].pending)
            try:
                v = self.rig.poll(i, 0.5 * tm.T / 10.0)
            except RemoteFailure as e:
                self._poll_failed(i, e.error, pending)
                return
            in_time(v is not None, f"ACK-1 violated: receiver {i}'s poll({0.5 * tm.T / 10.0:.2f}) found nothing while "
                                   f"{sorted(pending)} are pending")
            assert v in pending, f"ACK-1 violated: receiver {i}'s poll() applied {v}; pending: {sorted(pending)}"
            self._answered(i, v, read=False)

    def _answered(self, i, v, read=True):
        """Receiver i (this incarnation) acked v: every future up to v is answered for it (ACK-2).

        `read`: the sender has read that ack (a send returned because of it); otherwise, as
        after a pull receiver's poll(), the ack may still be on its way."""
        self.model.acked(i, v)
        for p in self.futures:
            if i in p.targets and p.version <= v and self.model.same(i, p.epochs[i]):
                p.answered.add(i)
                if read:
                    p.read.add(i)

    # ---- rules: sending ---------------------------------------------------------------------

    @precondition(lambda self: not self.closed)
    @rule(data=st.data(), subset=st.none() | st.sets(st.integers(0, N - 1), min_size=1).map(sorted),
          in_place=st.booleans(), poll_pulls=st.booleans())
    def send(self, data, subset, in_place, poll_pulls):
        """A synchronous send (SEND-1, SEND-2, ACK-6, CONS-5); `in_place` updates the sender's
        object and sends weights=None (API-2); unpolled pull receivers and held push receivers
        are silent, so the send must time out naming them, on time (SEND-2)."""
        targets = self._targets(subset)
        w = data.draw(S.weights_for(self.spec), label="weights")
        arg = w
        if in_place:
            self._fill_source(w)
            arg = None
        if self.model.unusable(targets):
            return self._expect_refusal(lambda: self.sender.send(arg, workers=subset, timeout=tm.T), targets, "send",
                                        describe(w))
        pulls = [i for i in targets if self.model.peers[i].mode == "pull"]
        silent = {i for i in targets if i in self.held or (i in pulls and not poll_pulls)}
        failing = (set(targets) & self.faulty) - silent  # an unpolled pull receiver answers nothing
        if poll_pulls:
            for i in pulls:
                self._drain(i)
            for i in pulls:
                self.rig.workers[i].submit("poll", poll_wait())
        # With failing and silent targets, a long timeout shows how long the call collects answers
        # after the first failure: at most 1 s (SEND-7), so it raises long before the timeout.
        window = bool(failing and silent) and data.draw(st.booleans(), label="long timeout beside a failure")
        timeout = tm.TIMED if silent and not window else tm.T
        before = self.model.version
        v, error, elapsed = self._timed(self.sender.send, arg, workers=subset, timeout=timeout, what="send",
                                        within=timeout)
        polled = {i: self.rig.workers[i].result(poll_wait() + tm.SLACK) for i in pulls} if poll_pulls else {}
        if self._is(error, "SyncTimeoutError") and self.sender.version == before:
            note("send found no free slot in time and published nothing (SLOT-3)")
            self._check_fields(error, "SyncTimeoutError", "SLOT-3", "send without a free slot",
                               workers_within=self._live())
            assert elapsed >= timeout - tm.EARLY, f"SLOT-3 violated: send gave up after {elapsed:.2f} s of {timeout} s"
            for status, value in polled.values():
                assert status == "ok" and value is None, f"CONS-3 violated: poll() gave {value} with nothing published"
            return
        assert self.sender.version == before + 1, (
            f"VER-1 violated: after a send that got past every check the version is {self.sender.version}, "
            f"expected {before + 1}"
        )
        v_pub = self.model.publish(describe(w), targets)
        if failing and silent and self._is(error, "SyncTimeoutError") and not self._is(error, "ReceiverError"):
            # The short timeout passed before the failing receivers' Ack(error) was read: legal (SEND-2),
            # they are named as timed out with the silent ones. Their applies failed all the same.
            self._check_fields(error, "SyncTimeoutError", "SEND-2", f"send to failing {sorted(failing)} and silent "
                               f"{sorted(silent)} receivers", workers_within=targets, workers_include=silent,
                               version=v_pub)
            assert elapsed >= timeout - tm.EARLY, (
                f"SEND-2 violated: send(timeout={timeout}) raised SyncTimeoutError after {elapsed:.2f} s"
            )
            for i in set(targets) - set(error.workers) - failing:
                self._answered(i, v_pub)
            for i in failing:
                self.model.failed_apply(i, v_pub)
        elif failing:
            # Silent receivers may be named too, as timed out, once the timeout has passed (SEND-7).
            named = self._check_fields(error, "ReceiverError", "ACK-6",
                                       f"send to receivers {sorted(failing)} whose apply fails",
                                       workers_within=failing | silent, version=v_pub)
            if window:
                in_time(elapsed <= 1.0 + tm.SLACK, f"SEND-7 violated: send(timeout={timeout}) with receivers "
                        f"{sorted(failing)} failing raised after {elapsed:.1f} s: after the first failure a call "
                        "collects the others' answers for at most 1 s")
            late = sorted(i for i in named if i not in failing)
            assert not late or (elapsed >= timeout - tm.EARLY and all(error.causes[i] == "timeout" for i in late)), (
                f"SEND-7 violated: send(timeout={timeout}) named silent receivers {late} after {elapsed:.2f} s "
                f"with causes {error.causes}"
            )
            for i in failing:
                self.model.failed_apply(i, v_pub)
        elif silent:
            if error is None:  # a silent receiver answered: it applied where it may not
                held = sorted(silent & self.held)
                raise AssertionError(
                    f"{'CONS-2' if held else 'CONS-3'} violated: send to {targets} returned {v}: receivers "
                    f"{held or sorted(silent)} applied it {'while a reading() block was open' if held else 'without poll()'}"
                )
            self._check_fields(error, "SyncTimeoutError", "SEND-2", f"send to silent receivers {sorted(silent)}",
                               workers_within=targets, workers_include=silent, version=v_pub)
            assert elapsed >= timeout - tm.EARLY, (
                f"SEND-2 violated: send(timeout={timeout}) raised SyncTimeoutError after {elapsed:.2f} s"
            )
            for i in set(targets) - set(error.workers):
                self._answered(i, v_pub)
        else:
            if self._is(error, "SyncTimeoutError"):
                raise TooSlow(f"SEND-1 violated: send(timeout={timeout}) to healthy live receivers {targets} timed "
                              f"out: {error}")
            assert error is None, (
                f"SEND-1, ACK-1 violated: send to healthy live receivers {targets} raised {type(error).__name__}: {error}"
            )
            assert v == v_pub, f"VER-1 violated: send returned {v}, expected {v_pub}"
            for i in targets:
                self._answered(i, v_pub)
        for i, (status, value) in polled.items():
            if status == "ok" and value is not None:
                assert value == v_pub, f"ACK-2 violated: receiver {i}'s poll() during the send applied {value}, not {v_pub}"
                self._answered(i, value)
            elif status == "err":
                self._poll_failed(i, value, {v_pub})

    @precondition(lambda self: not self.closed and len(self.futures) < 3)
    @rule(data=st.data(), subset=st.none() | st.sets(st.integers(0, N - 1), min_size=1).map(sorted))
    def send_async(self, data, subset):
        """Publish now, wait later (SEND-5); a full set of slots times out publishing nothing (SLOT-3)."""
        targets = self._targets(subset)
        w = data.draw(S.weights_for(self.spec), label="weights")
        if self.model.unusable(targets):
            return self._expect_refusal(lambda: self.sender.send_async(w, workers=subset, timeout=tm.T), targets,
                                        "send_async", describe(w))
        before = self.sender.version
        f, error, elapsed = self._timed(self.sender.send_async, w, workers=subset, timeout=tm.SHORT, what="send_async",
                                        within=tm.SHORT)
        if error is not None:
            self._check_fields(error, "SyncTimeoutError", "SLOT-3", "send_async without a free slot",
                               workers_within=self._live())
            assert elapsed >= tm.SHORT - tm.EARLY, f"SLOT-3 violated: send_async gave up after {elapsed:.2f} s of {tm.SHORT} s"
            assert self.sender.version == before, "VER-2 violated: send_async that found no free slot published"
            return
        v = self.model.publish(describe(w), targets)
        assert f.version == v, f"VER-1 violated: send_async published version {f.version}, expected {v}"
        assert sorted(f.workers) == targets, f"API-2 violated: future.workers {f.workers}, expected {targets}"
        self.futures.append(Pending(f, v, targets, self.model.epochs(targets), set(targets) & self.faulty))

    @precondition(lambda self: bool(self.futures) and not self.closed)
    @rule()
    def wait(self):
        """Wait on the oldest future after the pull receivers polled (SEND-5, ACK-2, VER-4).

        A target held in reading() is silent: wait(TIMED) raises SyncTimeoutError on time and
        the future stays waitable (SEND-5)."""
        p = self.futures[0]  # popped after the drain, whose acks answer it too (ACK-2)
        same = {i for i in p.targets if self.model.same(i, p.epochs[i])}
        gone = {i for i in p.targets if i not in same or self.model.peers[i].state != LIVE}
        for i in sorted(same - gone):
            if self.model.peers[i].mode == "pull":
                self._drain(i)
        self.futures.pop(0)
        silent = (same - gone) & self.held - p.answered
        timeout = (0.0 if p.version % 2 else tm.TIMED) if silent else tm.T  # wait(0) only looks (SEND-5)
        done_before = p.future.done()  # every target has answered: the error must name all at fault (SEND-7)
        v, e, elapsed = self._timed(p.future.wait, timeout, what="future.wait", within=timeout)
        failing = p.failing & same
        if e is not None:
            if not silent and self._is(e, "SyncTimeoutError") and not self._is(e, "ReceiverError") \
                    and not self._is(e, "ReceiverDiedError"):
                raise TooSlow(f"SEND-5 violated: wait({timeout}) on version {p.version} timed out with no target "
                              f"held: {e}")
            # Each receiver named by its own cause (SEND-7): gone ones died (a drop too, API-9), failing ones
            # answered error, and once the timeout passed, held ones (or any not yet answered) timed out.
            at_fault = {"died": gone, "error": failing | (p.failing - same),
                        "timeout": set(p.targets) - gone - p.answered if silent else set()}
            timed_out = self._is(e, "SyncTimeoutError") and silent
            causes = e.causes if isinstance(getattr(e, "causes", None), dict) else {}
            late = sorted(i for i, c in causes.items() if c == "timeout" and not silent
                          and i in set(p.targets) - gone - p.answered)
            if late:  # a healthy target that had not answered by wait(T): the machine was slow
                raise TooSlow(f"SEND-5 violated: wait({timeout}) on version {p.version} named {late} timed out, with "
                              f"no target held: {e}")
            must = set(silent) if timed_out else set()
            if done_before:  # every target had answered: the error names every failure (SEND-7)
                must |= failing - gone
            named = self._check_causes(e, "SEND-5" if timed_out else "SEND-7",
                                       f"wait({timeout}) on version {p.version}{' after done()' if done_before else ''}"
                                       f"{f' with receivers {sorted(silent)} held' if silent else ''}",
                                       at_fault, must=must, version=p.version)
            for i in named:
                if i in same and e.causes.get(i) == "error" and i not in p.errored:  # never blame a later incarnation
                    self.model.failed_apply(i, p.version)                             # (LIFE-2), nor twice
                    p.errored.add(i)
            self.model.seen_dead(i for i in named if i in same and e.causes.get(i) == "died")
            if timed_out:
                assert elapsed >= timeout - tm.EARLY, f"SEND-5 violated: wait({timeout}) raised after {elapsed:.2f} s"
                self.futures.insert(0, p)  # a timed-out wait leaves the future waitable (SEND-5)
        else:
            assert not silent, (
                f"CONS-2 violated: wait() returned {v}: receivers {sorted(silent)} applied it while a reading() block "
                "was open"
            )
            assert not failing, f"ACK-6 violated: wait() returned {v} though the apply of {sorted(failing)} fails"
            assert v == p.version, f"SEND-5 violated: wait() returned {v}, expected {p.version}"
            for i in same - gone:
                self._answered(i, p.version)
            # an error may be raised early, before every target answered (SEND-2); a return may not
            assert p.future.done(), f"API-2 violated: future of version {p.version} not done() after wait() returned"
            if "hooks" in self.ws.CAPABILITIES:  # every target answered ok, by its own Ack or a newer one's (ACK-2)
                fig = p.future.figures
                ok = dict.fromkeys(p.targets, "ok")
                assert fig.causes == ok and sorted(fig.answered_s) == sorted(p.targets), (
                    f"API-11 violated: version {p.version} returned from wait(), every target having answered ok, yet "
                    f"its final figures give causes {fig.causes} and answered_s {fig.answered_s}")

    # ---- rules: receivers ------------------------------------------------------------------

    @precondition(lambda self: bool(self._ids(lambda p: p.state == LIVE and p.mode == "pull")))
    @rule(data=st.data(), timeout=st.sampled_from(["default", 0.0, "short", -1.0, None]))
    def poll(self, data, timeout):
        """Pull mode applies only in poll() and returns the newest pending version or None,
        waiting up to its timeout (default 0) when nothing is pending; a negative timeout
        raises ValueError (CONS-3, ACK-2, API-3). Reader threads of its own may hold the
        version back past the timeout: then None, and it stays pending (API-7)."""
        i = data.draw(st.sampled_from(self._ids(lambda p: p.state == LIVE and p.mode == "pull")), label="receiver")
        pending = set(self.model.peers[i].pending)
        w = self.rig.workers[i]
        if timeout is None and (not pending or i in self.readers):
            timeout = 0.0  # poll(None) waits without bound: only with a version pending that nothing holds back
        if timeout is None:
            try:
                v = w.call("poll", None, bound=tm.T + tm.BOUND)
            except RemoteFailure as e:
                return self._poll_failed(i, e.error, pending)
            except HarnessError as e:
                raise TooSlow(f"API-3 violated: poll(None) with {sorted(pending)} pending did not return: {e}") from None
            assert v in pending, f"API-3 violated: poll(None) gave {v} with {sorted(pending)} pending; it waits for one"
            self._answered(i, v, read=False)
            return
        if timeout == -1.0:
            status, err = w.outcome("poll", -1.0)
            assert status == "err" and err.isa("ValueError"), (
                f"API-3 violated: poll(-1) gave {err if status == 'err' else repr(err)}; expected ValueError"
            )
            return
        timeout = tm.SHORT if timeout == "short" else timeout
        t0 = time.monotonic()
        try:
            v = w.call("poll") if timeout == "default" else w.call("poll", timeout)
        except RemoteFailure as e:
            return self._poll_failed(i, e.error, pending)
        elapsed = time.monotonic() - t0
        timeout = 0.0 if timeout == "default" else timeout
        in_time(elapsed <= timeout + tm.SLACK, f"API-3 violated: poll({timeout}) took {elapsed:.2f} s")
        if not pending:
            assert v is None, f"CONS-3 violated: poll() applied version {v} with nothing pending"
            assert elapsed >= timeout - tm.EARLY, f"API-3 violated: poll({timeout}) returned None after {elapsed:.2f} s"
        elif v is None:
            # A reader thread holds it back (API-7), or its Receive has not arrived yet: it stays pending.
            assert elapsed >= timeout - tm.EARLY, f"API-3 violated: poll({timeout}) gave up after {elapsed:.2f} s"
        else:
            assert v in pending, f"ACK-1 violated: poll() applied {v}; pending: {sorted(pending)}"
            self._answered(i, v, read=False)

    @precondition(lambda self: bool(self._faultable()))
    @rule(data=st.data())
    def fault(self, data):
        """Make receiver i's target mismatch the manifest, or mend it: its applies fail (ACK-7, ACK-6)."""
        i = data.draw(st.sampled_from(self._faultable()), label="receiver")
        on = i not in self.faulty
        self.rig.workers[i].call("fault", "raise" if on else None)
        (self.faulty.add if on else self.faulty.discard)(i)

    @precondition(lambda self: bool(self._holdable()) or bool(self.held and not self.closed))
    @rule(data=st.data())
    def hold(self, data):
        """Hold reading() open in a push receiver, or let go: while held it applies nothing (CONS-2)."""
        i = data.draw(st.sampled_from(sorted(set(self._holdable()) | self.held)), label="receiver")
        w = self.rig.workers[i]
        if i in self.held:
            v, d = w.call("release", snapshot=True)
            self.held.discard(i)
            msg = self.model.check_snapshot(i, v, d)
            assert msg is None, msg
        else:
            entered_at = w.call("hold")
            self.held.add(i)
            if entered_at is not None:  # what it applied before the hold began was acked (or will be)
                self._answered(i, entered_at, read=False)

    @precondition(lambda self: bool(self._ids(lambda p: p.state == LIVE and p.id not in self.faulty)))
    @rule(data=st.data())
    def toggle_reader(self, data):
        """A thread reading continuously inside reading(): it must never see a torn version (CONS-1).

        In both modes: a pull receiver's poll() waits for reading() blocks in other threads (CONS-2).
        """
        ids = self._ids(lambda p: p.state == LIVE and p.id not in self.faulty and p.id not in self.held)
        if not ids:
            return
        i = data.draw(st.sampled_from(ids), label="receiver")
        w = self.rig.workers[i]
        if i in self.readers:
            self.readers.discard(i)
            self._check_reader(i, w.call("reader_stop"))
        else:
            w.call("reader_start")
            self.readers.add(i)

    def _check_reader(self, i, obs):
        assert not obs["errors"], f"CONS-1 violated: receiver {i}'s reader saw {obs['errors'][:2]}"
        for (v, d), _ in obs["observed"]:
            if v is None:
                continue
            assert d == self.model.digests.get(v), (
                f"CONS-1 violated: receiver {i} showed version {v} inside reading() with other bytes (torn read)"
            )

    def _forget(self, i):
        self.readers.discard(i)
        self.faulty.discard(i)
        self.held.discard(i)

    @precondition(lambda self: self.kills < 1 and bool(self._live()))
    @rule(data=st.data())
    def kill(self, data):
        """SIGKILL a receiver process: its end of channel is seen without a timeout (CON-1, SEND-3)."""
        i = data.draw(st.sampled_from(self._live()), label="receiver")
        self.kills += 1
        self._forget(i)
        self.rig.workers[i].kill()
        self.model.gone(i)
        self.model.peers[i].local = "none"

    @precondition(lambda self: not self.closed and self.drops < 1 and "drop" in self.ws.CAPABILITIES)
    @rule(data=st.data())
    def drop(self, data):
        """sender.drop(i) (API-9): a live receiver is cut off as if it had died, at once; any other is
        left as it is. What the dropped receiver then holds is no longer covered (its own stop is checked
        by test_failures); its process is kept for a restart or the next example, whose open() discards it
        (a process spawned anew costs seconds per example)."""
        i = data.draw(st.integers(0, N - 1), label="receiver")
        live = self.model.peers[i].state == LIVE
        self.drops += 1
        t0 = time.monotonic()
        try:
            bounded(self.rig.sender.drop, i, timeout=tm.T, limit=tm.T + tm.SLACK, what=f"sender.drop({i})")
        except HarnessError as e:
            raise TooSlow(f"API-9 violated (API-7): {e}") from None
        except Exception as e:
            raise AssertionError(f"API-9 violated: drop({i}) of a {self.model.peers[i].state} receiver raised "
                                 f"{type(e).__name__}: {e}") from None
        note(f"drop({i}) of a {'live' if live else self.model.peers[i].state} receiver: {time.monotonic() - t0:.3f} s")
        if live:
            self._forget(i)
            self.model.gone(i, seen=True)  # drop() returned: the sender knows
            self.model.peers[i].local, self.model.peers[i].dropped = "none", True

    @precondition(lambda self: bool(self._live()))
    @rule(data=st.data())
    def close_receiver(self, data):
        """receiver.close() is idempotent and fast; afterwards only close, version, closed, stopped and
        weights may be used (LIFE-5, LIFE-6); the sender sees the receiver gone."""
        i = data.draw(st.sampled_from(self._live()), label="receiver")
        w = self.rig.workers[i]
        if i in self.faulty:
            w.call("fault", None)  # the caller mends its target, so the weights stay readable
            self.model.peers[i].maybe_failed = bool(self.model.peers[i].pending)
        self._forget(i)
        out = w.call("close", twice=True, keep=True)
        assert out["second_close"] is None, f"LIFE-5 violated: a second receiver.close() raised {out['second_close']}"
        in_time(out["elapsed"] <= tm.SLACK, f"LIFE-5 violated: receiver.close() took {out['elapsed']:.1f} s")
        calls = w.call("closed_calls")
        for name in ("poll", "connect", "reading"):
            err = calls[name]
            assert err is not None and err.isa("ClosedError"), (
                f"LIFE-6 violated: receiver.{name}() after close gave {err if err else 'no error'}; expected ClosedError"
            )
        pending = self.model.peers[i].pending
        self.model.gone(i)
        # it may have applied any version pending before close(), and keeps it (LIFE-5, LIFE-6)
        self.model.peers[i].pending, self.model.peers[i].local = pending, "closed"

    @precondition(lambda self: bool(self._ids(lambda p: p.state in (UNCONNECTED, GONE))))
    @rule(data=st.data())
    def join_or_restart(self, data):
        """Late join (LIFE-1) or restart after death or close (LIFE-2): the latest version arrives."""
        i = data.draw(st.sampled_from(self._ids(lambda p: p.state in (UNCONNECTED, GONE))), label="receiver")
        if self.model.peers[i].state == UNCONNECTED:
            self.rig.connect([i])
        else:
            self.rig.restart(i)  # a new incarnation: the futures that named the old one keep their outcome

    # ---- rules: misuse -----------------------------------------------------------------------

    @precondition(lambda self: not self.closed)
    @rule(data=st.data(), kind=S.bad_kinds, use_async=st.booleans())
    def bad_send(self, data, kind, use_async):
        """Bad weights are rejected with WeightsMismatchError before any byte changes (BAD-1..BAD-4, VER-2)."""
        good = data.draw(S.weights_for(self.spec), label="base")
        bad = S.make_bad(self.spec, good, kind, data.draw(st.integers(0, 9)))
        if self.kind == "tensordict" and data.draw(st.booleans(), label="names that collide once flattened"):
            collision = S.colliding_tensordict(self.spec, good)
            if collision is not None:
                bad, kind = collision, "collision"
        before = self.sender.version
        live = self._live()
        fn = self.sender.send_async if use_async else self.sender.send
        _, e, _ = self._timed(fn, bad, workers=live or None, timeout=tm.SHORT, what=f"send of bad weights ({kind})",
                             within=tm.SHORT)
        rid = S.BAD_IDS.get(kind, "BAD-1")
        assert e is not None, f"{rid} violated: bad input ({kind}) was accepted"
        if live:
            assert self._is(e, "WeightsMismatchError"), (
                f"{rid} violated: bad input ({kind}) raised {type(e).__name__}: {e}; expected WeightsMismatchError"
            )
        assert self.sender.version == before, f"VER-2 violated: bad input ({kind}) moved the version"

    @precondition(lambda self: not self.closed)
    @rule(kind=st.sampled_from(["empty", "repeat", "out_of_range", "far_out_of_range", "negative", "negative_timeout"]),
          call=st.sampled_from(["send", "send_async"]))
    def bad_arguments(self, kind, call):
        """Bad `workers` or a negative timeout raise ValueError before anything is written (SEND-6, API-2)."""
        live = self._live()
        if not live and kind in ("repeat", "negative_timeout"):
            return
        workers = {"empty": [], "repeat": live[:1] * 2, "out_of_range": [N], "far_out_of_range": [N + 7], "negative": [-1],
                   "negative_timeout": live}[kind]
        timeout = -1.0 if kind == "negative_timeout" else tm.SHORT
        before = self.sender.version
        _, e, _ = self._timed(getattr(self.sender, call), workers=workers, timeout=timeout, what=f"{call} ({kind})",
                              within=tm.SHORT)
        rid = "SEND-6" if kind != "negative_timeout" else "API-2"
        assert isinstance(e, ValueError) and not self._is(e, "WeightsMismatchError"), f"{rid} violated: {call} with {kind} gave {type(e).__name__ if e else 'no error'}: {e}; expected ValueError"
        assert self.sender.version == before, f"VER-2 violated: {call} with {kind} moved the version"

    @precondition(lambda self: bool(self._live()))
    @rule(data=st.data())
    def handle_of_live(self, data):
        """sender.handle(i) for a live receiver raises ProtocolError and changes nothing (LIFE-3)."""
        i = data.draw(st.sampled_from(self._live()), label="receiver")
        _, e, _ = self._timed(self.sender.handle, i, what=f"handle({i})", within=tm.SHORT)
        assert self._is(e, "ProtocolError"), (
            f"LIFE-3 violated: handle({i}) of a live receiver gave {type(e).__name__ if e else 'a handle'}"
        )

    # ---- rules: closing the sender -------------------------------------------------------------

    @precondition(lambda self: not self.closed and self.steps >= CLOSE_AFTER)
    @rule()
    def close_sender(self):
        """close() stops every receiver, keeps their weights, releases every slot (LIFE-4, LIFE-7, SM-R-3)."""
        self._close_and_check()

    def _close_and_check(self):
        for i in sorted(self.held):
            self.rig.workers[i].call("release")
        self.held.clear()
        for i in sorted(self.readers):
            self._check_reader(i, self.rig.workers[i].call("reader_stop"))
        self.readers.clear()
        self.futures.clear()
        _, e, _ = self._timed(self.sender.close, what="sender.close()", within=tm.T)
        assert e is None, f"LIFE-4 violated: sender.close() raised {type(e).__name__}: {e}"
        self.closed = True
        self.rig.model.closed = True
        _, e, _ = self._timed(self.sender.close, what="a second sender.close()", within=tm.T)
        assert e is None, f"LIFE-4 violated: a second sender.close() raised {type(e).__name__}: {e}"
        for p in self.model.peers:
            if p.local != "live":
                continue
            w = self.rig.workers[p.id]
            if p.mode == "pull":
                assert w.call("poll", 0.0) is None, f"LIFE-7 violated: receiver {p.id}'s poll() after Stop is not None"
            deadline = time.monotonic() + tm.T
            while not w.call("state")["stopped"]:
                in_time(time.monotonic() < deadline, f"LIFE-7 violated: receiver {p.id} not stopped {tm.T:.0f} s after "
                                                     "sender.close()")
                time.sleep(0.02)
            p.local = "stopped"  # it keeps whichever pending version it applied before Stop

    @precondition(lambda self: self.closed and not self.probed)
    @rule()
    def closed_sender_calls(self):
        """A closed sender refuses every call but close(), version and closed (LIFE-6)."""
        s = self.sender
        assert s.version == self.model.version, f"LIFE-6 violated: version of a closed sender is {s.version}"
        assert s.closed is True, "LIFE-6 violated: sender.closed is not True after close()"
        for what, fn in (("send", lambda: s.send(timeout=tm.SHORT)), ("send_async", lambda: s.send_async(timeout=tm.SHORT)),
                         ("handle", lambda: s.handle(0)), ("connect", lambda: s.connect(tm.SHORT)),
                         *([("drop", lambda: s.drop(0, timeout=tm.SHORT))] if "drop" in self.ws.CAPABILITIES else [])):
            _, e, _ = self._timed(fn, what=f"{what} on a closed sender", within=tm.SHORT)
            assert self._is(e, "ClosedError"), (
                f"LIFE-6 violated: {what} on a closed sender gave {type(e).__name__ if e else 'no error'}: {e}"
            )
        self.probed = True

    @precondition(lambda self: self.probed or (self.closed and type(self).closed_sender_calls is None))
    @rule()
    def idle(self):
        """Nothing is left to do once the sender is closed and probed (or closed, with the probe switched off)."""

    # ---- invariants ---------------------------------------------------------------------

    @invariant()
    def everything_observable_is_as_the_model_says(self):
        """The sender's, every future's and every receiver's observable state (API-2, API-3, ACK-3, LIFE-*)."""
        if self.rig is None:
            return
        self.steps += 1
        s = self.sender
        assert s.version == self.model.version, f"VER-1 violated: sender.version {s.version}, expected {self.model.version}"
        assert s.closed is self.closed, f"LIFE-4 violated: sender.closed is {s.closed!r}, expected {self.closed}"
        for p in self.futures:
            f = p.future
            assert f.version == p.version and sorted(f.workers) == p.targets, (
                f"API-2 violated: a future of version {p.version} to {p.targets} now shows {f.version} to {f.workers}"
            )
            done = f.done()
            assert isinstance(done, bool), f"API-2 violated: future.done() returned {done!r}"
            assert done or not p.done_seen, f"API-2 violated: future of version {p.version} was done(), now is not"
            p.done_seen = done
            unanswered = [i for i in p.targets if self.model.same(i, p.epochs[i]) and self.model.peers[i].state == LIVE
                          and self.model.peers[i].mode == "pull" and i not in p.answered | p.errored]
            assert not (done and unanswered), (
                f"ACK-2, SEND-5 violated: the future of version {p.version} is done() though pull receivers "
                f"{unanswered} have not polled since it was published (an ack settled a future it does not answer)"
            )
            if set(p.targets) <= p.answered and not done:
                # acks the sender has read settle at once; others once they arrive (ACK-2)
                settle = 0 if set(p.targets) <= p.read else tm.SLACK
                deadline = time.monotonic() + settle
                while not done and time.monotonic() < deadline:
                    time.sleep(0.01)
                    done = f.done()
                in_time(done or not settle, f"API-2 violated: every target of version {p.version} acked it or a later "
                                            f"version, but its future is not done() {settle:.0f} s later")
                assert done, (
                    f"ACK-2 violated: every target of version {p.version} acked it or a later version, but its "
                    "future is not done()"
                )
                p.done_seen = True
        for p in self.model.peers:
            if p.local == "none":
                continue
            self._observe(p)

    def _observe(self, p):
        w = self.rig.workers[p.id]
        try:
            obs = w.call("observe", snapshot=p.local != "new" and p.id not in self.held)
        except HarnessError as e:
            raise TooSlow(
                f"API-3 violated: receiver {p.id} ({p.local}): reading version, stopped, closed, failure and "
                f"weights (inside reading()) did not return: {e}"
            ) from None
        assert obs["output"] == "", f"API-6 violated: receiver {p.id}'s process printed {obs['output'][:300]!r}"
        expected = self.model.expected_observation(p.id)
        for name in ("stopped", "closed"):
            got = obs[name]
            assert got == ("value", expected[name]), (
                f"{'LIFE-7' if name == 'stopped' else 'LIFE-6'} violated: receiver {p.id} ({p.local}) shows "
                f"{name} = {got[1]}; expected {expected[name]}"
            )
        assert obs["failure"] == ("value", None), f"SM-R-7 violated: receiver {p.id}.failure is {obs['failure'][1]}"
        version = obs["version"]
        assert version[0] == "value", f"API-3 violated: receiver {p.id}.version raised {version[1]}"
        if p.local == "new":
            assert version[1] is None, f"API-3 violated: receiver {p.id} shows version {version[1]} before connect"
            return
        if p.id in self.faulty:
            # its applies fail: it keeps its version until a pending one fails, then None (ACK-6)
            allowed = {p.acked} | ({None} if p.pending else set())
            assert version[1] in allowed, f"ACK-6 violated: receiver {p.id} reports version {version[1]}; allowed {allowed}"
            return
        if p.id in self.held:
            return  # the holder thread has reading() open; a snapshot would wait for it
        snap = obs["snapshot"]
        assert snap[0] == "value", f"LIFE-6, API-3 violated: receiver {p.id} ({p.local}): reading its weights raised {snap[1]}"
        v, d, held = snap[1]
        msg = self.model.check_snapshot(p.id, v, d)
        assert msg is None, msg
        if held is not None and v is not None:
            # The target is where the weights go (API-3): it holds exactly what the receiver reports,
            # after close() too, where a zero-copy module target keeps a copy of its version (LIFE-5).
            assert held == d, (
                f"{'LIFE-5' if p.local == 'closed' else 'ACK-3'} violated: receiver {p.id} ({p.local}) reports "
                f"version {v}, but its target object holds other bytes: {diff(d, held)}"
            )

    def teardown(self):
        if self.rig is None:
            return
        failing = sys.exc_info()[1] is not None  # teardown runs in a finally: keep the step's own error
        try:
            if not self.closed and not failing:
                self._close_and_check()  # every example ends with close() and its checks (LIFE-4, LIFE-7)
                self.everything_observable_is_as_the_model_says()
        finally:
            self.rig.teardown()
        if not self.closed or failing:
            return
        left = shm_segments() - self.shm_before
        assert not left, f"LIFE-4 violated: shared segments left after close(): {sorted(left)}"
        threads = new_threads(self.threads_before)
        assert not threads, f"LIFE-4 violated: threads left in the sender process after close(): {threads}"
        procs = {p: c for p, c in child_processes().items() if p not in self.pool.pids() and "resource_tracker" not in c
                 and "forkserver" not in c}
        assert not procs, f"LIFE-4 violated: processes left after close(): {procs}"


@pytest.mark.waits(12)
@pytest.mark.req(
    "ACK-1", "ACK-2", "ACK-3", "ACK-6", "ACK-7", "VER-1", "VER-2", "VER-4", "SEND-1", "SEND-2", "SEND-3", "SEND-4",
    "SEND-5", "SEND-6", "CONS-1", "CONS-2", "CONS-3", "CONS-5", "BAD-1", "BAD-2", "BAD-3", "BAD-4", "LIFE-1",
    "LIFE-2", "LIFE-3", "LIFE-4", "LIFE-5", "LIFE-6", "LIFE-7", "SM-R-3", "CON-1", "SLOT-3", "API-2", "API-3",
    "API-4", "API-6", "SEND-7", "API-9", "API-11",
)
@pytest.mark.timeout(900)
def test_protocol_state_machine(ws, pool, capfd, request):
    Protocol.ws, Protocol.pool = ws, pool
    listed_tests, listed_ids = request.config._conformance_xfails
    later = request.config._conformance_later  # --protocol-version 1.0: 1.1's rules off, its checks not counted
    off = rules_off(listed_tests, listed_ids | later)
    machine = type("Protocol", (Protocol,), dict.fromkeys(off)) if off else Protocol  # a rule set to None is gone
    if off:
        request.node.user_properties.append(("rules_off", sorted(off)))
        not_checked(request.node, {i for r in off for i in STATE_MACHINE_RULES[r]})  # not exercised this run
    not_checked(request.node, later)
    capfd.readouterr()  # a re-check starts clean
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        before = Protocol.examples
        try:
            run_state_machine_as_test(machine)
        except Exception as e:
            _tell_how_to_reproduce(e, request)
            raise
        finally:
            request.node.user_properties.append(("examples", Protocol.examples - before))
    out, err = capfd.readouterr()
    assert not out and not err, f"API-6 violated: the sender's process printed {(out + err)[:300]!r}"
    # A warning is printed to stderr in a plain run: the implementation must not cause one.
    shown = [f"{w.category.__name__}: {w.message}" for w in caught
             if not issubclass(w.category, DeprecationWarning) and "hypothesis" not in w.filename]
    assert not shown, f"API-6 violated: the sender's process warned {shown[:3]}"


def _tell_how_to_reproduce(e: BaseException, request) -> None:
    """Beside the steps Hypothesis printed: the one command that runs them again, and what to do if the suite
    is wrong."""
    config = request.config
    replayed = replay_note(config)
    if replayed:
        e.add_note(replayed)
    e.add_note(f"run the steps above again: {reproduce_command(config, request.node.nodeid)}")
    e.add_note("if you believe the suite is wrong here (your implementation does what the spec allows), the model "
               "is what to question: send this report, the steps above included, to the suite's maintainers "
               "(docs/conformance.md, 'When the suite is wrong'); list the test in --xfails-file meanwhile")


class Scripted:
    """Stands in for Hypothesis's `data` in a rule called by hand: the draws named in `script` by their label
    are given, the rest drawn at random (a replay of an example whose steps are written down)."""

    def __init__(self, **script):
        self.script = script

    def draw(self, strategy, label=None):
        if label in self.script:
            return self.script[label]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # example() outside a test is what we want here
            return strategy.example()


def _replay(ws, pool, monkeypatch, spec, setup: dict, steps) -> None:
    """Run `steps` ((rule name, kwargs) pairs) on a fresh machine, checking the invariant after each, as
    Hypothesis would; the machine is torn down (close() checked) at the end. The rules' notes go to stdout."""
    monkeypatch.setattr(sys.modules[__name__], "note", print)
    Protocol.ws, Protocol.pool = ws, pool
    m = Protocol()
    try:
        m.setup(spec=spec, first=N, data=Scripted(**setup))
        m.everything_observable_is_as_the_model_says()
        for name, kwargs in steps:
            getattr(m, name)(**kwargs)
            m.everything_observable_is_as_the_model_says()
    finally:
        m.teardown()


@pytest.mark.req("SEND-5", "SEND-7", "API-9")
@pytest.mark.needs("push", "pull", "module", "tensordict", "drop")
def test_a_wait_may_name_a_dropped_receiver_died_beside_a_held_one_timed_out(ws, pool, monkeypatch):
    """The steps Hypothesis found on a fresh clone (issue 39): receiver 1 held in reading(), a send_async to all,
    receiver 0 dropped, wait(0). The error may carry both causes (SEND-7): 0 `died` (dropped, API-9) and 1
    `timeout`; the model once allowed only the held one to be named, and called the reference a violation."""
    spec = [("w", torch.float32, (3,))]
    setup = {"sender weights kind": "module", "mode 0": "pull", "mode 1": "push", "mode 2": "pull",
             "zero_copy 0": False, "zero_copy 1": False, "zero_copy 2": False,
             "target 0": "tensordict", "target 1": None, "target 2": None}
    _replay(ws, pool, monkeypatch, spec, setup, [
        ("hold", {"data": Scripted(receiver=1)}),
        ("send_async", {"data": Scripted(), "subset": None}),
        ("poll", {"data": Scripted(receiver=2), "timeout": "default"}),
        ("drop", {"data": Scripted(receiver=0)}),
        ("wait", {}),
    ])
