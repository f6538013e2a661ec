"""LIFE-9: an exception raised asynchronously at any line of the library (a KeyboardInterrupt) leaves close()
bounded and no sender lock held.

A fault injector, as an outside tester would run it: `sys.settrace` raises KeyboardInterrupt at the n-th
line the library executes in the calling thread, for every n until the scenario runs through. After each
injection the sender and the receiver are closed from another thread, which must return within the
reaction bound without raising, with the sender's lock free. One sweep runs the sender's calls, one the receiver's.
"""

from __future__ import annotations

import os
import sys
import threading

import pytest
import torch

import weightsync as ws
from weightsync import limits

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900),
              pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")]

PKG = os.path.dirname(ws.__file__)
BOUND = limits.REACTION_BOUND + 2.0


def weights(v: int = 0) -> dict[str, torch.Tensor]:
    return {"w": torch.full((4,), float(v)), "b": torch.full((2,), float(v))}


def run_interrupted(n: int, body) -> tuple[bool, str | None, str | None]:
    """Runs body with KeyboardInterrupt at the n-th library line: (whether it fired, where, any other error)."""
    count, where = [0], [None]

    def local(frame, event, arg):
        if event == "line":
            count[0] += 1
            if count[0] == n:
                where[0] = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
                raise KeyboardInterrupt
        return local

    sys.settrace(lambda frame, event, arg: local if frame.f_code.co_filename.startswith(PKG) else None)
    error = None
    try:
        body()
    except KeyboardInterrupt:
        pass
    except Exception as e:  # noqa: BLE001 - an interrupted call must not turn into another error later
        error = f"{type(e).__name__}: {e}"[:200]
    finally:
        sys.settrace(None)
    return where[0] is not None, where[0], error


def closes_in_time(obj) -> str:
    """"" when obj.close() returned within the bound; else what went wrong (past the bound, or raised)."""
    raised: list[str] = []

    def run() -> None:
        try:
            obj.close()
        except BaseException as e:  # noqa: BLE001 - close() must not raise, interrupted before or not
            raised.append(f"close() raised {type(e).__name__}: {e}"[:200])

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(BOUND)
    return "close() past its bound" if t.is_alive() else raised[0] if raised else ""


def sender_calls():
    s = ws.Sender(weights(), 1)
    r = ws.Receiver(s.handle(0))
    threading.Thread(target=lambda: r.connect(5), daemon=True).start()

    def body():
        s.connect(5)
        s.send(weights(1), timeout=5)
        s.send_async(weights(2), timeout=5).wait(5)
        s.close()

    return s, r, body


def receiver_calls():
    s = ws.Sender(weights(), 1)
    r = ws.Receiver(s.handle(0), mode="pull")

    def trainer():
        try:
            s.connect(5)
            for v in (1, 2):
                s.send_async(weights(v), timeout=5)
        except ws.WeightSyncError:
            pass

    threading.Thread(target=trainer, daemon=True).start()

    def body():
        r.connect(5)
        for _ in range(3):
            r.poll(timeout=0.05)
            with r.reading():
                dict(r.weights)
        r.close()

    return s, r, body


@pytest.mark.parametrize("scenario", [sender_calls, receiver_calls], ids=["sender", "receiver"])
def test_an_interrupt_at_any_line_leaves_close_bounded(scenario):
    """LIFE-9, LIFE-4, LIFE-5."""
    bad, n = [], 0
    while True:
        n += 1
        s, r, body = scenario()
        fired, where, error = run_interrupted(n, body)
        first, second = (r, s) if scenario is receiver_calls else (s, r)
        closing = closes_in_time(first) or closes_in_time(second)
        if closing or s._hub.mu.locked() or error:
            bad.append((n, where, closing, "lock held" if s._hub.mu.locked() else "", error))
        if not fired:
            break
    assert n > 500, f"the scenario ran only {n} library lines: the tracer missed the library"
    assert not bad, f"LIFE-9 violated at {len(bad)} of {n} lines: {bad[:5]}"
