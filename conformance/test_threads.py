"""Spec 10.4, threads (API-7): every wait is bounded by its caller's timeout, and close() ends them.

A trainer calls the sender from several threads: one thread may wait on a silent
receiver without a timeout while another polls a future or shuts down. Neither
may be held up by the first; the waiting call ends with ClosedError once the
sender is closed.
"""

from __future__ import annotations

import threading
import time

import pytest

from . import strategies as S
from . import timing as tm
from .bounds import HarnessError, bounded
from .clauses import occurred
from .probes import stack_of
from .rig import expect_error, readers_held_back
from .verdict import TooSlow, checked_nothing, in_time


def _within(fn, *args, what: str, limit: float, **kwargs):
    """A call in another thread must return within `limit` (API-7): not being held up is about time."""
    try:
        return bounded(fn, *args, limit=limit, what=what, **kwargs)
    except HarnessError as e:
        raise TooSlow(f"API-7 violated: {e}") from None
    except TimeoutError as e:
        raise TooSlow(f"API-7 violated: {what} timed out: {e}") from None


def basic(seed=0):
    return S.distinct_weights(S.BASIC_SPEC, seed)


@pytest.mark.req("API-7", "LIFE-4", "SEND-2", "API-2")
@pytest.mark.needs("push", "pull")
def test_a_send_waiting_without_timeout_holds_up_no_other_thread(ws, rigs):
    rig = rigs(basic(0), 2, modes=["push", "pull"])  # receiver 1 never polls: it never answers
    sender = rig.sender
    out = {}

    def wait_forever():
        t0 = time.monotonic()
        try:
            sender.send(basic(1), timeout=None)
            out["result"] = "returned"
        except Exception as e:  # noqa: BLE001 - checked below
            out["result"] = e
        out["elapsed"] = time.monotonic() - t0

    blocked = threading.Thread(target=wait_forever, daemon=True)
    blocked.start()
    end = time.monotonic() + tm.T
    while sender.version < 1 and time.monotonic() < end:  # the blocked send has published
        time.sleep(0.01)
    in_time(sender.version == 1, f"SEND-1 violated: the first send did not publish within {tm.T:.0f} s")
    f = _within(sender.send_async, basic(2), workers=[0], timeout=tm.T, limit=tm.T + tm.SLACK,
                what="send_async in another thread")
    assert _within(f.wait, tm.T, limit=tm.T + tm.SLACK, what="wait() in another thread") == 2, (
        "API-7 violated: a send in another thread was held up by a send waiting on a silent receiver"
    )
    g = _within(sender.send_async, basic(3), timeout=tm.T, limit=tm.T + tm.SLACK, what="send_async")
    t0 = time.monotonic()
    expect_error(ws, "SyncTimeoutError", g.wait, tm.TIMED, ids="API-7", what="future.wait(t) in another thread",
                 limit=tm.TIMED + tm.SLACK)
    assert time.monotonic() - t0 >= tm.TIMED - tm.EARLY, "SEND-2 violated: wait() raised SyncTimeoutError early"
    try:  # done() never blocks, while another thread waits inside the sender included (API-2)
        done = bounded(g.done, limit=tm.SLACK, what="future.done() while another thread waits in send(timeout=None)")
    except HarnessError as e:
        raise TooSlow(f"API-2 violated: {e}") from None
    assert not done, "API-2 violated: done() is true while receiver 1 has not answered"
    _within(sender.close, limit=tm.REACTION + tm.SLACK, what="close() while another thread waits")
    blocked.join(tm.REACTION + tm.SLACK)
    in_time(not blocked.is_alive(), "API-7 violated: the waiting send did not end after close()")
    assert isinstance(out["result"], ws.ClosedError), (
        f"API-7 violated: the send waiting when close() ran ended with {out['result']!r}, expected ClosedError"
    )
    assert sender.closed, "LIFE-4 violated: sender.closed is not True after close()"


@pytest.mark.req("API-7", "LIFE-4", "INIT-5")
@pytest.mark.needs("push")
def test_a_connect_waiting_without_timeout_ends_at_close(ws, rigs):
    rig = rigs(basic(0), 2, connect=[0])
    rig.sender.handle(1)  # a receiver that is never started: its handle stays open here
    out = {}

    def connect():
        try:
            rig.sender.connect(None, workers=[1])
            out["result"] = "returned"
        except Exception as e:  # noqa: BLE001
            out["result"] = e

    t = threading.Thread(target=connect, daemon=True)
    t.start()
    time.sleep(0.1)
    # A connect(None) with receiver 1 never started may not return before close (INIT-5): it has nothing to say.
    assert t.is_alive() or isinstance(out.get("result"), Exception), (
        f"INIT-5 violated: connect(None, workers=[1]) of a receiver never started ended with {out.get('result')!r} "
        "before the sender closed")
    try:
        rig.send(basic(1), workers=[0], timeout=tm.T)  # another thread's send proceeds meanwhile
    except TooSlow as e:
        raise TooSlow(f"API-7 violated: a send was held up by a connect(None) in another thread: {e}") from None
    rig.check()
    _within(rig.sender.close, limit=tm.REACTION + tm.SLACK, what="close()")
    t.join(tm.REACTION + tm.SLACK)
    in_time(not t.is_alive(), "API-7 violated: connect(None) still waits after close()")
    assert isinstance(out["result"], (ws.ClosedError, ws.ReceiverDiedError)), (
        f"API-7 violated: connect(None) ended with {out['result']!r} when the sender closed"
    )


@pytest.mark.req("API-7", "CONS-2", "API-3")
@pytest.mark.needs("pull")
def test_poll_and_reading_bound_their_wait_for_other_threads(rigs):
    rig = rigs(basic(0), 1, modes=["pull"])
    rig.send_async(basic(1))
    out = rig.workers[0].call("bounded_waits", tm.TIMED, tm.EARLY, tm.SLACK, bound=4 * tm.T)
    in_time(out["poll_s"] <= tm.TIMED + tm.SLACK,
            f"API-7 violated: poll({tm.TIMED}) behind a reader took {out['poll_s']:.1f} s" +
            (" and had not returned then" if out["poll"] == "still waiting" else ""))
    assert not (isinstance(out["poll"], str) and out["poll"].startswith("raised")), (
        f"API-3 violated: poll({tm.TIMED}) behind a reader {out['poll']}; it returns None, the version staying pending")
    assert out["poll"] is None, (
        f"API-7 violated: poll({tm.TIMED}) applied version {out['poll']} while another thread was inside reading()"
    )
    r = out["reading"]
    assert not isinstance(r, str), f"API-7 violated: reading({tm.TIMED}) while an apply waits: {r}"
    assert r.isa("SyncTimeoutError"), f"API-7 violated: reading({tm.TIMED}) raised {r}; expected SyncTimeoutError"
    assert tm.TIMED - tm.EARLY <= out["reading_s"], f"API-7 violated: reading({tm.TIMED}) gave up after {out['reading_s']:.2f} s"
    in_time(out["reading_s"] <= tm.TIMED + tm.SLACK, f"API-7 violated: reading({tm.TIMED}) returned after {out['reading_s']:.2f} s")
    assert out["then"] == 1, f"API-7 violated: the poll that waited for the reader returned {out['then']}, not 1"
    rig.model.acked(0, 1)
    rig.check()


def _pair(ws, mode: str):
    """A sender and one receiver of `mode` (no target) in this process, connected."""
    sender = ws.Sender(basic(0), 1)
    receiver = ws.Receiver(sender.handle(0), mode=mode)
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("rx", receiver.connect(tm.T)), daemon=True)
    t.start()
    try:
        _within(sender.connect, tm.T, limit=tm.T + tm.SLACK, what="sender.connect")
    except BaseException:
        receiver.close()
        sender.close()
        raise
    t.join(tm.T + tm.SLACK)
    return sender, receiver


def _inside(thread: threading.Thread, name: str, bound: float) -> bool:
    """Whether `thread` is, within `bound` s, running a function called `name` of code outside this suite."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if any(f.f_code.co_name == name and "conformance" not in f.f_code.co_filename for f in stack_of(thread.ident)):
            return True
        time.sleep(0.005)
    return False


@pytest.mark.req("API-7", "LIFE-5")
@pytest.mark.needs("pull")
@pytest.mark.parametrize("waiting_for", ["a version", "a reading() block"])
def test_close_from_another_thread_ends_a_waiting_poll(ws, waiting_for):
    """One thread of a pull receiver waits in poll(None): for a version (nothing sent), or for a reading() block a
    third thread holds open while a version is pending (CONS-2). close() from another thread returns within the
    reaction bound and the waiting poll() then returns None, whatever it waited for."""
    sender, receiver = _pair(ws, "pull")
    out = {}
    entered, release = threading.Event(), threading.Event()

    def poll():
        try:
            out["poll"] = receiver.poll(None)
        except Exception as e:  # noqa: BLE001 - judged below
            out["poll"] = e

    def hold():
        with receiver.reading(tm.T):
            entered.set()
            release.wait(2 * tm.REACTION + tm.T)

    try:
        if waiting_for == "a reading() block":
            threading.Thread(target=hold, name="conformance-holder", daemon=True).start()
            in_time(entered.wait(tm.T), f"CONS-2 violated: reading() on an idle receiver did not enter in {tm.T} s")
            sender.send_async(basic(1), timeout=tm.T)
        t = threading.Thread(target=poll, name="conformance-poll", daemon=True)
        t.start()
        if not _inside(t, "poll", tm.T):
            checked_nothing("the implementation's poll() runs no Python function named poll: cannot tell it waits")
        if waiting_for == "a reading() block":
            # The poll waits for the block once a new reading() is held back (CONS-2: a waiting apply holds new
            # blocks back); until then it may still be reading the Receive.
            if not readers_held_back(ws, receiver, tm.T):
                checked_nothing(f"within {tm.T:g} s no reading(timeout) was held back: the poll was never seen "
                                "waiting for the open block (CONS-2.d decides that)")
            occurred("API-7.m")
        _within(receiver.close, limit=tm.REACTION + tm.SLACK, what="receiver.close() while another thread polls")
        t.join(tm.REACTION + tm.SLACK)
        in_time(not t.is_alive(), f"API-7 violated: poll(None) waiting for {waiting_for} still waits "
                                  f"{tm.REACTION + tm.SLACK:g} s after another thread's receiver.close()")
        assert out["poll"] is None, (f"API-7 violated: poll(None) waiting for {waiting_for} when another thread closed "
                                     f"the receiver ended with {out['poll']!r}, not None")
    finally:
        release.set()
        receiver.close()
        sender.close()


@pytest.mark.req("LIFE-7", "API-9", "API-7")
@pytest.mark.needs("pull")
@pytest.mark.parametrize("how", ["sender.close()", pytest.param("sender.drop(0)", marks=pytest.mark.needs("drop"))])
def test_a_poll_waiting_for_a_version_ends_when_the_trainer_stops_the_receiver(ws, how):
    """One thread of a pull receiver waits in poll(None), nothing sent; the trainer closes, or drops it, which sends
    Stop and ends the channel. The wait ends with it: poll() returns None within the reaction bound (LIFE-7: after
    Stop, poll() returns None), `stopped` is true, and the receiver still holds version 0."""
    sender, receiver = _pair(ws, "pull")
    out = {}

    def poll():
        try:
            out["poll"] = receiver.poll(None)
        except Exception as e:  # noqa: BLE001 - judged below
            out["poll"] = e

    try:
        t = threading.Thread(target=poll, name="conformance-poll", daemon=True)
        t.start()
        if not _inside(t, "poll", tm.T):
            checked_nothing("the implementation's poll() runs no Python function named poll: cannot tell it waits")
        time.sleep(0.05)  # not a bound: the poll is inside its wait for the channel, as a rule
        assert t.is_alive(), (f"API-3 violated: poll(None), nothing sent, returned {out.get('poll')!r} before the "
                              "trainer did anything: it waits without bound for a version")
        occurred("LIFE-7.f")
        if how == "sender.close()":
            _within(sender.close, limit=tm.REACTION + tm.SLACK, what="sender.close() while a pull receiver polls")
        else:
            _within(sender.drop, 0, limit=tm.REACTION + tm.SLACK, what="sender.drop(0) while it polls")
        t.join(tm.REACTION + tm.SLACK)
        in_time(not t.is_alive(), f"LIFE-7 violated: poll(None) waiting for a version still waits "
                                  f"{tm.REACTION + tm.SLACK:g} s after {how} sent Stop and ended its channel")
        assert out["poll"] is None, (f"LIFE-7 violated: poll(None) waiting for a version when the trainer called "
                                     f"{how} ended with {out['poll']!r}, not None")
        assert receiver.stopped, f"LIFE-7, SM-R-8 violated: after {how} ended a waiting poll(), stopped is False"
        assert receiver.version == 0, (f"LIFE-7 violated: after {how}, the receiver holds version "
                                       f"{receiver.version}, not 0 (nothing was sent)")
    finally:
        receiver.close()
        sender.close()


@pytest.mark.req("LIFE-5", "CONS-2", "API-7")
@pytest.mark.needs("push")
def test_close_while_an_apply_waits_for_a_reader_starts_no_apply(ws):
    """A push receiver in this process: a reading() block open in one thread, then version 1 sent, so its apply
    waits (a new reading(timeout) is held back). close() from a second thread returns within the reaction bound
    though the block stays open, and once the block has ended the receiver still holds version 0 with version 0's
    bytes: no apply starts after close() returned (LIFE-5), not even the one that was waiting."""
    import torch

    sender, receiver = _pair(ws, "push")
    entered, release = threading.Event(), threading.Event()
    left = threading.Event()

    def hold():
        try:
            with receiver.reading(tm.T):
                entered.set()
                release.wait(2 * (tm.REACTION + tm.SLACK))
        finally:
            left.set()

    try:
        holder = threading.Thread(target=hold, name="conformance-holder", daemon=True)
        holder.start()
        in_time(entered.wait(tm.T), f"CONS-2 violated: reading() on an idle receiver did not enter in {tm.T} s")
        sender.send_async(basic(1), timeout=tm.T)
        if not readers_held_back(ws, receiver, tm.T):
            checked_nothing(f"within {tm.T:g} s no reading(timeout) was held back: the apply of version 1 was never "
                            "seen waiting for the open block (CONS-2.d decides that)")
        occurred("LIFE-5.j")
        _within(receiver.close, limit=tm.REACTION + tm.SLACK, what="receiver.close() while its apply waits for a "
                "reading() block another thread holds open")
        held = receiver.version, {k: t.clone() for k, t in receiver.weights.items()}
        release.set()
        in_time(left.wait(tm.T), f"the reading() block did not end within {tm.T:g} s of being let go")
        deadline = time.monotonic() + tm.SLACK / 3
        while time.monotonic() < deadline:
            version, now = receiver.version, receiver.weights
            changed = [k for k in held[1] if not torch.equal(held[1][k], now[k])]
            assert version == held[0] == 0 and not changed, (
                f"LIFE-5 violated: after receiver.close() returned with version 1's apply waiting for a reader, the "
                f"apply still ran once the block ended: version {held[0]} -> {version}, entries changed {changed}")
            time.sleep(0.02)
    finally:
        release.set()
        receiver.close()
        sender.close()


@pytest.mark.req("API-7", "ACK-2")
@pytest.mark.needs("pull")
def test_answers_read_by_one_thread_settle_the_futures_others_wait_on(ws):
    """Versions 1 and 2 pending on a pull receiver; three threads wait, one on version 1's future and two on
    version 2's: once the receiver has polled, every wait returns its version within the reaction bound, whichever
    thread read the Ack."""
    sender, receiver = _pair(ws, "pull")
    try:
        f1 = sender.send_async(basic(1), timeout=tm.T)
        f2 = sender.send_async(basic(2), timeout=tm.T)
        out: dict = {}

        def wait(key, f):
            try:
                out[key] = f.wait(4 * (tm.REACTION + tm.SLACK))  # far past the bound checked below
            except Exception as e:  # noqa: BLE001 - judged below
                out[key] = e

        threads = [threading.Thread(target=wait, args=(k, f), daemon=True)
                   for k, f in (("a", f1), ("b", f2), ("c", f2))]
        for t in threads:
            t.start()
        end = time.monotonic() + tm.T
        applied = []
        while 2 not in applied and time.monotonic() < end:
            v = receiver.poll(tm.T)
            if v is not None:
                applied.append(v)
        in_time(2 in applied, f"API-7 violated: the pull receiver's poll() did not apply version 2: {applied}")
        end = time.monotonic() + tm.REACTION + tm.SLACK
        for t in threads:
            t.join(max(0.0, end - time.monotonic()))
        in_time(not any(t.is_alive() for t in threads), f"API-7 violated: a wait() in another thread still waits "
                                                          f"{tm.REACTION + tm.SLACK:g} s after the receiver answered "
                                                          "every version")
        for k, want in (("a", 1), ("b", 2), ("c", 2)):
            if isinstance(out[k], TimeoutError):
                raise TooSlow(f"API-7 violated: a wait() for version {want} timed out ({out[k]}) although the "
                              "receiver answered it")
            assert out[k] == want, f"API-7 violated: wait() for version {want} in its own thread gave {out[k]!r}"
    finally:
        receiver.close()
        sender.close()


class _HeldMapping:
    """Weights whose first read blocks until released: the thread sending them stays inside the sender."""

    def __init__(self, weights: dict):
        self._w = weights
        self.entered, self.release = threading.Event(), threading.Event()

    def _hold(self):
        self.entered.set()
        self.release.wait(4 * (tm.REACTION + tm.SLACK))

    def __getitem__(self, k):
        self._hold()
        return self._w[k]

    def __iter__(self):
        self._hold()
        return iter(self._w)

    def __len__(self):
        return len(self._w)

    def keys(self):
        self._hold()
        return self._w.keys()

    def items(self):
        self._hold()
        return self._w.items()

    def values(self):
        self._hold()
        return self._w.values()


@pytest.mark.req("API-7", "API-9")
@pytest.mark.needs("push", "mapping")
def test_a_call_waiting_for_another_thread_to_leave_the_sender_keeps_its_timeout(ws):
    """One thread sends weights whose reading blocks (it is inside the sender, reading them); meanwhile another
    thread's send_async(timeout=t), connect(t) and, where declared, drop(0, timeout=t) each return or raise
    SyncTimeoutError within t plus the grace, never earlier than t when they raise: the wait for the other thread
    is bounded by the call's own timeout (API-7, API-9)."""
    from collections.abc import Mapping

    Mapping.register(_HeldMapping)
    sender, receiver = _pair(ws, "push")
    held = _HeldMapping(basic(1))
    out = {}

    def send_held():
        try:
            out["held"] = sender.send(held, timeout=4 * (tm.REACTION + tm.SLACK))
        except Exception as e:  # noqa: BLE001 - judged below
            out["held"] = e

    t = threading.Thread(target=send_held, name="conformance-held-send", daemon=True)
    try:
        t.start()
        if not held.entered.wait(tm.T):
            checked_nothing("the implementation did not read the weights of a send within the bound: nothing held")
        calls = [("send_async(timeout=t)", lambda: sender.send_async(basic(2), timeout=tm.TIMED)),
                 ("connect(t)", lambda: sender.connect(tm.TIMED))]
        if "drop" in ws.CAPABILITIES:
            calls.append(("drop(0, timeout=t)", lambda: sender.drop(0, timeout=tm.TIMED)))
        for what, fn in calls:
            t0 = time.monotonic()
            try:
                bounded(fn, limit=tm.TIMED + tm.SLACK, what=f"{what} while another thread is inside the sender")
            except HarnessError as e:
                ids = "API-9" if what.startswith("drop") else "API-7"
                raise TooSlow(f"{ids} violated: {e} (t = {tm.TIMED:g} s)") from None
            except ws.SyncTimeoutError:
                took = time.monotonic() - t0
                assert took >= tm.TIMED - tm.EARLY, f"API-7 violated: {what} gave up after {took:.2f} s, before t"
            except ws.WeightSyncError:
                pass  # another outcome is not this test's (the call did not wait)
    finally:
        held.release.set()
        t.join(tm.T + tm.SLACK)
        receiver.close()
        sender.close()
