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
from .rig import expect_error
from .verdict import TooSlow, in_time


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
    assert out["poll"] is None, (
        f"API-7 violated: poll({tm.TIMED}) applied version {out['poll']} while another thread was inside reading()"
    )
    in_time(out["poll_s"] <= tm.TIMED + tm.SLACK, f"API-7 violated: poll({tm.TIMED}) took {out['poll_s']:.1f} s behind a reader")
    r = out["reading"]
    assert not isinstance(r, str), f"API-7 violated: reading({tm.TIMED}) while an apply waits: {r}"
    assert r.isa("SyncTimeoutError"), f"API-7 violated: reading({tm.TIMED}) raised {r}; expected SyncTimeoutError"
    assert tm.TIMED - tm.EARLY <= out["reading_s"], f"API-7 violated: reading({tm.TIMED}) gave up after {out['reading_s']:.2f} s"
    in_time(out["reading_s"] <= tm.TIMED + tm.SLACK, f"API-7 violated: reading({tm.TIMED}) returned after {out['reading_s']:.2f} s")
    assert out["then"] == 1, f"API-7 violated: the poll that waited for the reader returned {out['then']}, not 1"
    rig.model.acked(0, 1)
    rig.check()
