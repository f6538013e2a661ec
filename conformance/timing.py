"""Every bound the suite uses, one factor (the timescale) for all of them, and the machine's measure.

Read the bounds as attributes at the moment they are used (`tm.T`, never `from .timing
import T`): the factor changes during a run. It starts as --conformance-timescale (or
$WEIGHTSYNC_CONFORMANCE_TIMESCALE) times what `calibrate` measured of the machine, and a
check that failed only on time is run once more inside `scaled(RECHECK)`. Worker
processes inherit the starting factor through the environment and get the current one
with every command (pool.Worker.submit).

Only EARLY is never scaled: a call that times out must not give up before its timeout,
however slow the machine.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from contextlib import contextmanager

from .names import TIMESCALE_ENV

#: The bounds at timescale 1, in seconds.
BASE = {
    "T": 10.0,  # timeout given to calls that are expected to succeed
    "SHORT": 0.3,  # timeout given to calls that are expected to time out
    "TIMED": 0.5,  # a timeout whose elapsed time is checked against it (SEND-2, INIT-5, API-2)
    "SLACK": 3.0,  # the spec's grace: how much later than its timeout a call may end
    "REACTION": 10.0,  # the spec's reaction bound (README, "Time bounds")
    "BOUND": 15.0,  # a worker process's answer to one command
    "START_BOUND": 90.0,  # a worker process's start (it imports torch and the implementation)
}
#: How much earlier than its timeout a call that timed out may raise (clock granularity only).
EARLY = 0.05
#: WIRE-7: a frame is a violation 10 s after its first byte. The implementation's own bound, never
#: scaled: a check that something happens before it (on the 4 length bytes, WIRE-2) stays below it.
FRAME_BOUND = 10.0
#: The factor of a re-check: a failure that is only about time is run again at this many times the bounds.
RECHECK = 3.0
#: A test's wall time at timescale 1 before the suite calls it hung, unless --conformance-budget says otherwise
#: (set_budget; a test may ask for more with @pytest.mark.timeout); `budget` scales it and makes room for the re-check.
DEFAULT_BUDGET = 60.0


class _Now:
    """The run's current factor and hang budget: the one object that set_scale, scaled and set_budget change.
    The bounds are computed from it whenever they are read (`__getattr__`), so no copy of one can fall behind."""

    scale = 1.0
    test_budget = DEFAULT_BUDGET


_now = _Now()


def __getattr__(name: str) -> float:
    """`tm.T` (any key of BASE), `tm.SCALE` and `tm.TEST_BUDGET`, as they are at the moment they are read."""
    if name in BASE:
        return BASE[name] * _now.scale
    if name == "SCALE":
        return _now.scale
    if name == "TEST_BUDGET":
        return _now.test_budget
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def budget(base: float | None = None) -> float:
    """The most a test may take, setup, re-check and teardown included, before it counts as a hang (`base`:
    its own wall time at timescale 1, TEST_BUDGET unless it asks for more)."""
    return (_now.test_budget if base is None else base) * _now.scale * (1.0 + RECHECK)


def set_budget(seconds: float) -> None:
    """A test's wall time at timescale 1 before the suite calls it hung (--conformance-budget)."""
    _now.test_budget = float(seconds)


def set_scale(scale: float) -> None:
    """Make every bound `scale` times its base value (this process only)."""
    _now.scale = float(scale)


@contextmanager
def scaled(factor: float):
    """Every bound `factor` times larger inside the block (a re-check)."""
    before = _now.scale
    set_scale(before * factor)
    try:
        yield
    finally:
        set_scale(before)


set_scale(float(os.environ.get(TIMESCALE_ENV, "1") or 1))


def calibrate(samples: int = 5) -> dict:
    """How busy this machine is now, measured in about half a second.

    `load`: wall time over CPU time of a short busy loop (the median of `samples`):
    about 1 on an idle machine, about 4 when every core is shared by four runnable
    processes. It does not depend on how fast the machine is, only on how much of a
    core this process gets. `rtt_ms`: the median round trip of one byte between two
    threads over a socket pair, which grows with the scheduler's latency.
    """
    ratios = []
    for _ in range(samples):
        w0, c0 = time.perf_counter(), time.thread_time()
        n = 0
        while time.thread_time() - c0 < 0.02:
            n += 1
        ratios.append((time.perf_counter() - w0) / max(time.thread_time() - c0, 1e-6))
    a, b = socket.socketpair()

    def echo():
        while (data := b.recv(1)) != b"":
            b.sendall(data)

    t = threading.Thread(target=echo, daemon=True, name="conformance-calibrate")
    t.start()
    rtts = []
    for _ in range(50):
        t0 = time.perf_counter()
        a.sendall(b"x")
        a.recv(1)
        rtts.append(time.perf_counter() - t0)
    a.close()
    t.join(1.0)
    b.close()
    return {"load": sorted(ratios)[len(ratios) // 2], "rtt_ms": 1000 * sorted(rtts)[len(rtts) // 2]}


def scale_for(measure: dict) -> float:
    """The timescale a measured machine gets: 1 up to a load of 1.5, then the load, at most 8.

    A round trip over 5 ms (some 100 times an idle machine's) means the scheduler itself
    lags; it counts as a load of 2 at least.
    """
    load = max(measure["load"], 2.0 if measure["rtt_ms"] > 5.0 else 1.0)
    return 1.0 if load <= 1.5 else min(round(load, 1), 8.0)


def fits(took: float, factors: float, budget: float) -> bool:
    """Whether runs at `factors` times (summed) the timescale of a first run that took `took` seconds, after it,
    still end within a test's hang `budget` (setup and teardown left a quarter of it)."""
    return took * (1.0 + factors) <= 0.75 * budget


def reruns(scale: float, busy: float) -> tuple[float | None, float]:
    """After a check failed only on time at timescale `scale`, with the machine measured just after needing `busy`:
    (the factor of a run at the timescale the machine has now, None when it is no busier than `scale` allows;
    the factor of the re-check, RECHECK or that factor if larger)."""
    now = busy / scale
    return (now if now > 1.0 else None), max(RECHECK, now)
