"""The whole protocol as a Hypothesis state machine over real receiver processes.

Rules drive one sender and three receivers (push or pull, each in its own
worker process) through sends, subset sends, async sends and waits, polls,
concurrent readers, faults in apply, SIGKILL, receiver close, bad input, late
join, restart and close. After every step each live receiver must show a
version the model allows, with exactly that version's bytes (ACK-3). A failure
shrinks to a short list of steps; `--hypothesis-seed` replays a run and the
printed `@reproduce_failure` blob replays one example.
"""

from __future__ import annotations

import sys
import threading
import time

import pytest
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, run_state_machine_as_test

from . import strategies as S
from .harness import RemoteFailure, bounded, child_processes, new_threads, shm_state
from .model import FAILED, GONE, LIVE, UNCONNECTED, describe
from .rig import SHORT, SLACK, T, Rig

N = 3
#: close_sender becomes possible only after this many steps, so that examples do something first.
CLOSE_AFTER = 8
#: Timeout of a pull receiver's poll while a sync send to it runs.
POLL_WAIT = 5.0


class Protocol(RuleBasedStateMachine):
    ws = None
    pool = None

    def __init__(self):
        super().__init__()
        self.rig: Rig | None = None
        self.faulty: set[int] = set()
        self.futures: list = []
        self.readers: set[int] = set()
        self.kills = 0
        self.steps = 0
        self.closed = False
        self.probed = False

    # ---- setup ------------------------------------------------------------------------

    @initialize(
        spec=S.specs(max_size=4),
        modes=st.lists(st.sampled_from(["push", "pull"]), min_size=N, max_size=N),
        first=st.integers(1, N),
        data=st.data(),
    )
    def setup(self, spec, modes, first, data):
        caps = self.ws.CAPABILITIES
        modes = [m if m in caps else ("push" if "push" in caps else "pull") for m in modes]
        self.spec = spec
        self.shm_before = shm_state()
        self.threads_before = {t.ident for t in threading.enumerate()}
        w0 = data.draw(S.weights_for(spec), label="initial weights")
        self.rig = Rig(self.ws, self.pool, w0, N, modes=modes, connect=list(range(first)))
        note(f"modes={modes}, connected={list(range(first))}")

    # ---- helpers ------------------------------------------------------------------------

    @property
    def model(self):
        return self.rig.model

    def _targets(self, workers):
        return list(range(N)) if workers is None else list(workers)

    def _ids(self, pred) -> list[int]:
        return [p.id for p in self.model.peers if pred(p)] if self.rig is not None and not self.closed else []

    def _pollable(self):
        return self._ids(lambda p: p.state == LIVE and p.mode == "pull")

    def _faultable(self):
        return self._ids(lambda p: p.state == LIVE and p.id not in self.readers) if self._quiet() else []

    def _readable(self):
        return self._ids(lambda p: p.state == LIVE and p.id not in self.faulty)

    def _live(self):
        return self._ids(lambda p: p.state == LIVE)

    def _joinable(self):
        return self._ids(lambda p: p.state in (UNCONNECTED, GONE, FAILED))

    def _quiet(self) -> bool:
        """No version is in flight anywhere (faults may only change then)."""
        return not self.futures and not any(p.pending for p in self.model.peers)

    def _expect_refusal(self, fn, targets, what):
        """A send to an unusable target: refused before publishing (SEND-4, VER-2)."""
        bad = self.model.unusable(targets)
        before = self.rig.sender.version
        try:
            bounded(fn, limit=T + SLACK, what=what)
        except (self.ws.ReceiverDiedError, self.ws.ReceiverError, self.ws.WeightSyncError) as e:
            states = set(bad.values())
            if GONE in states:
                assert isinstance(e, self.ws.ReceiverDiedError) or set(bad.values()) != {GONE}, (
                    f"SEND-4 violated: {what} to gone receivers {sorted(bad)} raised {type(e).__name__}"
                )
            if isinstance(e, (self.ws.ReceiverDiedError, self.ws.ReceiverError)):
                named = set(e.workers)
                assert named <= set(bad), f"SEND-2 violated: {what} names receivers {sorted(named)}; unusable: {bad}"
        else:
            raise AssertionError(f"SEND-4 violated: {what} to unusable receivers {bad} succeeded")
        assert self.rig.sender.version == before, (
            f"VER-2 violated: {what} refused for {bad} moved the version {before} -> {self.rig.sender.version}"
        )

    def _drain(self, i):
        """Poll a pull receiver until nothing is pending (its acks answer older sends, ACK-2)."""
        while self.model.peers[i].pending:
            try:
                v = self.rig.poll(i, 0.5)
            except RemoteFailure as e:
                assert i in self.faulty and e.error.isa("ReceiverError"), (
                    f"ACK-6 violated: receiver {i}'s poll() raised {e.error}"
                )
                self.model.failed_apply(i, max(self.model.peers[i].pending))
                return
            assert v is not None, (
                f"ACK-1 violated: receiver {i}'s poll() found nothing while {sorted(self.model.peers[i].pending)} are pending"
            )

    # ---- rules ---------------------------------------------------------------------------

    @precondition(lambda self: not self.closed)
    @rule(data=st.data(), subset=st.none() | st.sets(st.integers(0, N - 1), min_size=1).map(sorted))
    def send(self, data, subset):
        """A synchronous send (SEND-1, SEND-2, ACK-6, CONS-5)."""
        targets = self._targets(subset)
        w = data.draw(S.weights_for(self.spec), label="weights")
        if self.model.unusable(targets):
            return self._expect_refusal(lambda: self.rig.sender.send(w, workers=subset, timeout=T), targets, "send")
        pulls = [i for i in targets if self.model.peers[i].mode == "pull"]
        for i in pulls:
            self._drain(i)
        for i in pulls:
            self.rig.workers[i].submit("poll", POLL_WAIT)
        desc = describe(w)
        failing = sorted(set(targets) & self.faulty)
        error = None
        try:
            v = bounded(self.rig.sender.send, w, workers=subset, timeout=T, limit=T + SLACK, what="send")
        except (self.ws.ReceiverError, self.ws.WeightSyncError) as e:
            error = e
        polled = {i: self.rig.workers[i].result(POLL_WAIT + SLACK) for i in pulls}
        if isinstance(error, self.ws.SyncTimeoutError) and self.rig.sender.version == self.model.version:
            note("send found no free slot in time and published nothing (SLOT-3)")
            return
        assert self.rig.sender.version == self.model.version + 1, (
            f"VER-1 violated: after a send that got past every check the version is {self.rig.sender.version}, "
            f"expected {self.model.version + 1}"
        )
        v = self.model.publish(desc, targets)
        if failing:
            assert isinstance(error, self.ws.ReceiverError), (
                f"ACK-6 violated: send to receivers {failing} whose apply raises gave "
                f"{type(error).__name__ if error else 'no error'}: {error}"
            )
            assert set(error.workers) <= set(failing) and error.workers, (
                f"ACK-6 violated: ReceiverError names {error.workers}, the failing receivers are {failing}"
            )
            assert error.version == v, f"ACK-6 violated: ReceiverError carries version {error.version}, expected {v}"
            for i in failing:
                self.model.failed_apply(i, v)
            for i in targets:
                if i not in failing and self.model.peers[i].mode == "push":
                    pass  # may or may not have acked yet: stays pending (raised early, SEND-2)
        else:
            assert error is None, f"SEND-1, ACK-1 violated: send to healthy live receivers {targets} raised {error!r}"
            for i in targets:
                self.model.acked(i, v)
        for i, (status, value) in polled.items():
            if status == "ok" and value is not None:
                self.model.acked(i, value)

    @precondition(lambda self: not self.closed and len(self.futures) < 3)
    @rule(data=st.data(), subset=st.none() | st.sets(st.integers(0, N - 1), min_size=1).map(sorted))
    def send_async(self, data, subset):
        """Publish now, wait later (SEND-5); a full set of slots times out publishing nothing (SLOT-3)."""
        targets = self._targets(subset)
        w = data.draw(S.weights_for(self.spec), label="weights")
        if self.model.unusable(targets):
            return self._expect_refusal(lambda: self.rig.sender.send_async(w, workers=subset, timeout=T), targets,
                                        "send_async")
        before = self.rig.sender.version
        try:
            f = bounded(self.rig.sender.send_async, w, workers=subset, timeout=SHORT, limit=SHORT + SLACK,
                        what="send_async")
        except self.ws.SyncTimeoutError:
            assert self.rig.sender.version == before, "VER-2 violated: send_async that found no free slot published"
            return
        v = self.model.publish(describe(w), targets)
        assert f.version == v, f"VER-1 violated: send_async published version {f.version}, expected {v}"
        assert sorted(f.workers) == targets, f"API-2 violated: future.workers {f.workers}, expected {targets}"
        self.futures.append((f, targets, sorted(set(targets) & self.faulty), set()))

    def _lost(self, i):
        """Receiver i went away: futures naming it may fail naming it (SEND-3)."""
        for f in self.futures:
            if i in f[1]:
                f[3].add(i)

    @precondition(lambda self: bool(self.futures) and not self.closed)
    @rule()
    def wait(self):
        """Wait on the oldest future after the pull receivers polled (SEND-5, ACK-2, VER-4)."""
        f, targets, failing, gone = self.futures.pop(0)
        for i in targets:
            if self.model.peers[i].mode == "pull" and self.model.peers[i].state == LIVE and i not in gone:
                self._drain(i)
        try:
            v = bounded(f.wait, T, limit=T + SLACK, what="future.wait")
        except self.ws.WeightSyncError as e:
            named = set(getattr(e, "workers", []))
            assert (failing or gone) and named <= set(failing) | set(gone), (
                f"SEND-2 violated: wait() on version {f.version} raised {type(e).__name__} naming {sorted(named)}; "
                f"failing {failing}, gone {gone}"
            )
            if isinstance(e, self.ws.ReceiverError):
                for i in named:
                    self.model.failed_apply(i, f.version)
            return
        assert not failing, f"ACK-6 violated: wait() returned {v} though the apply of {failing} raises"
        assert v == f.version
        for i in targets:
            self.model.acked(i, v)

    @precondition(lambda self: bool(self._pollable()))
    @rule(data=st.data())
    def poll(self, data):
        """Pull mode applies only in poll() and returns the newest pending version or None (CONS-3, ACK-2)."""
        i = data.draw(st.sampled_from(self._pollable()), label="receiver")
        p = self.model.peers[i]
        pending = set(p.pending)
        try:
            v = self.rig.poll(i, 0.0)
        except RemoteFailure as e:
            assert i in self.faulty and pending and e.error.isa("ReceiverError"), f"ACK-6 violated: poll() raised {e.error}"
            self.model.failed_apply(i, max(pending))
            return
        if not pending:
            assert v is None, f"CONS-3 violated: poll() applied version {v} with nothing pending"

    @precondition(lambda self: bool(self._faultable()))
    @rule(data=st.data())
    def fault(self, data):
        """Make receiver i's apply raise, or stop doing so (ACK-6)."""
        i = data.draw(st.sampled_from(self._faultable()), label="receiver")
        on = i not in self.faulty
        self.rig.workers[i].call("fault", "raise" if on else None)
        (self.faulty.add if on else self.faulty.discard)(i)

    @precondition(lambda self: bool(self._readable()))
    @rule(data=st.data())
    def toggle_reader(self, data):
        """A thread reading continuously inside reading(): it must never see a torn version (CONS-1).

        In both modes: a pull receiver's poll() waits for reading() blocks in other threads (CONS-2).
        """
        i = data.draw(st.sampled_from(self._readable()), label="receiver")
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

    @precondition(lambda self: self.kills < 1 and bool(self._live()))
    @rule(data=st.data())
    def kill(self, data):
        """SIGKILL a receiver process: its end of channel is seen without a timeout (CON-1, SEND-3)."""
        i = data.draw(st.sampled_from(self._live()), label="receiver")
        self.kills += 1
        self.readers.discard(i)
        self.faulty.discard(i)
        self.rig.workers[i].kill()
        self.model.gone(i)
        self._lost(i)

    @precondition(lambda self: bool(self._live()))
    @rule(data=st.data())
    def close_receiver(self, data):
        """receiver.close(): idempotent, leaves no thread and no mapping (LIFE-5); the sender sees it gone."""
        i = data.draw(st.sampled_from(self._live()), label="receiver")
        self.readers.discard(i)
        self.faulty.discard(i)
        out = self.rig.workers[i].call("close", twice=True)
        assert out["second_close"] is None, f"LIFE-5 violated: a second receiver.close() raised {out['second_close']}"
        assert not out["threads"], f"LIFE-5 violated: receiver {i} left threads {out['threads']}"
        assert out["maps"] == 0 and out["fds"] == 0, f"LIFE-5 violated: receiver {i} left slots mapped: {out}"
        self.model.gone(i)
        self._lost(i)

    @precondition(lambda self: bool(self._joinable()))
    @rule(data=st.data())
    def join_or_restart(self, data):
        """Late join (LIFE-1) or restart after failure or death (LIFE-2): the latest version arrives."""
        i = data.draw(st.sampled_from(self._joinable()), label="receiver")
        if self.model.peers[i].state == UNCONNECTED:
            self.rig.connect([i])
        else:
            # futures that named i were settled when it went away
            self.rig.restart(i)

    @precondition(lambda self: not self.closed)
    @rule(data=st.data(), kind=S.bad_kinds)
    def bad_send(self, data, kind):
        """Bad input is rejected before any byte changes (BAD-1..BAD-4, VER-2)."""
        good = data.draw(S.weights_for(self.spec), label="base")
        bad = S.make_bad(self.spec, good, kind, data.draw(st.integers(0, 9)))
        before = self.rig.sender.version
        live = [p.id for p in self.model.peers if p.state == LIVE]
        try:
            self.rig.sender.send(bad, workers=live or None, timeout=SHORT)
        except (self.ws.WeightSyncError, ValueError, TypeError):
            pass
        else:
            raise AssertionError(f"{S.BAD_IDS[kind]} violated: bad input ({kind}) was accepted")
        assert self.rig.sender.version == before, f"VER-2 violated: bad input ({kind}) moved the version"

    @precondition(lambda self: not self.closed and self.steps >= CLOSE_AFTER)
    @rule()
    def close_sender(self):
        """close() stops every receiver, keeps their weights, releases every slot (LIFE-4, LIFE-7, SM-R-3)."""
        self._close_and_check()

    def _close_and_check(self):
        for i in sorted(self.readers):
            self._check_reader(i, self.rig.workers[i].call("reader_stop"))
        self.readers.clear()
        self.futures.clear()
        self.rig.sender.close()
        self.closed = True
        try:
            self.rig.sender.close()
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"LIFE-4 violated: a second sender.close() raised {type(e).__name__}: {e}") from None
        for p in self.model.peers:
            if p.state != LIVE:
                continue
            w = self.rig.workers[p.id]
            if p.mode == "pull":
                assert w.call("poll", 0.0) is None, f"LIFE-7 violated: receiver {p.id}'s poll() after Stop is not None"
            deadline = time.monotonic() + T
            while not w.call("state")["stopped"]:
                assert time.monotonic() < deadline, f"LIFE-7 violated: receiver {p.id} not stopped after sender.close()"
                time.sleep(0.02)

    @precondition(lambda self: self.closed and not self.probed)
    @rule()
    def closed_sender_calls(self):
        """A closed sender refuses every call but close() and version (LIFE-6)."""
        s = self.rig.sender
        assert s.version == self.model.version, f"LIFE-6 violated: version of a closed sender is {s.version}"
        for what, fn in (("send", lambda: s.send(timeout=SHORT)), ("handle", lambda: s.handle(0))):
            try:
                fn()
            except self.ws.ClosedError:
                pass
            except Exception as e:  # noqa: BLE001
                raise AssertionError(f"LIFE-6 violated: {what} on a closed sender raised {type(e).__name__}: {e}") from None
            else:
                raise AssertionError(f"LIFE-6 violated: {what} on a closed sender succeeded")
        s.close()
        self.probed = True

    @precondition(lambda self: self.probed)
    @rule()
    def idle(self):
        """Nothing is left to do once the sender is closed and probed."""

    # ---- invariants ---------------------------------------------------------------------

    @invariant()
    def receivers_hold_what_was_acked(self):
        """ACK-3: every live receiver shows an allowed version with exactly its bytes."""
        if self.rig is None:
            return
        self.steps += 1
        for p in self.model.peers:
            if p.state != LIVE:
                continue
            w = self.rig.workers[p.id]
            if p.id in self.faulty:
                # its apply raises: it keeps its version until a pending one fails, then None (ACK-6)
                allowed = {p.acked} | ({None} if p.pending else set())
                v = w.call("peek")
                assert v in allowed, f"ACK-6 violated: receiver {p.id} reports version {v}; allowed {allowed}"
                continue
            v, d = w.call("snapshot")
            msg = self.model.check_snapshot(p.id, v, d)
            assert msg is None, msg

    def teardown(self):
        if self.rig is None:
            return
        failing = sys.exc_info()[1] is not None  # teardown runs in a finally: keep the step's own error
        try:
            if not self.closed and not failing:
                self._close_and_check()  # every example ends with close() and its checks (LIFE-4, LIFE-7)
        finally:
            self.rig.teardown()
        if not self.closed or failing:
            return
        after = shm_state()
        assert after == self.shm_before, f"LIFE-4 violated: shared segments left after close(): {self.shm_before} -> {after}"
        threads = new_threads(self.threads_before)
        assert not threads, f"LIFE-4 violated: threads left in the sender process after close(): {threads}"
        procs = {p: c for p, c in child_processes().items() if p not in self.pool.pids() and "resource_tracker" not in c}
        assert not procs, f"LIFE-4 violated: processes left after close(): {procs}"


@pytest.mark.req(
    "ACK-1", "ACK-2", "ACK-3", "ACK-6", "VER-1", "VER-2", "VER-4", "SEND-1", "SEND-2", "SEND-3", "SEND-4",
    "SEND-5", "CONS-1", "CONS-3", "CONS-5", "BAD-1", "BAD-2", "BAD-3", "BAD-4", "LIFE-1", "LIFE-2", "LIFE-4",
    "LIFE-5", "LIFE-6", "LIFE-7", "SM-R-3", "CON-1", "SLOT-3",
)
@pytest.mark.timeout(900)
def test_protocol_state_machine(ws, pool):
    Protocol.ws, Protocol.pool = ws, pool
    run_state_machine_as_test(Protocol)
