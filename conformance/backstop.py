"""The suite's last bound on a test, for the hang that pytest-timeout cannot end.

pytest-timeout stops a test at its budget by raising in the thread that runs it. An implementation that
swallows every exception in a loop, or sits in native code that never returns to Python, outlives that;
the run would hang with it. So each test also has a watch: `GRACE` (scaled) past its budget, the watch
judges where the test's thread is (inside a call of the implementation: a hang of that call, verdict.call_in;
elsewhere: the suite's own wait, inconclusive), ends the receiver processes it started, writes that verdict
where the controlling process finds it, and ends the process that ran the test. Under pytest-xdist the
controlling process reports the test with that verdict and the run goes on in a new worker process. Without
xdist (`-n 0`) the watch interrupts the run as Ctrl-C would, so its report is written; if even that does not
end it, the process ends.
"""

from __future__ import annotations

import _thread
import json
import os
import shutil
import sys
import tempfile
import threading
import traceback
import weakref
from collections.abc import Callable
from pathlib import Path

from . import timing as tm
from .probes import stack_of
from .verdict import INCONCLUSIVE, VIOLATED, call_in

#: Seconds at timescale 1 past a test's budget before its watch acts (at most a quarter of the budget):
#: pytest-timeout had its chance.
GRACE = 30.0
#: The folder where a watch leaves its verdict for the controlling process (set by it, inherited by workers).
ENV = "WEIGHTSYNC_CONFORMANCE_BACKSTOP"
#: The exit status of a process a watch ended.
EXIT = 70

_pools: weakref.WeakSet = weakref.WeakSet()


def prepare() -> None:
    """In the controlling process: the folder the workers' watches write to."""
    if not os.environ.get(ENV):
        os.environ[ENV] = tempfile.mkdtemp(prefix="weightsync-backstop-")


def clean() -> None:
    """In the controlling process, at the end: the folder goes."""
    folder = os.environ.pop(ENV, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def register(pool) -> None:
    """A pool of receiver processes, ended with the test's process (they would outlive it)."""
    _pools.add(pool)


def watch(nodeid: str, ids: list[str], budget: float, packages: frozenset[str],
          finish: Callable[[dict], int] | None) -> threading.Timer:
    """Starts the watch of the test now running in this thread; cancel it when the test ends. `finish`, in a run
    without xdist: reports the test's verdict and the run (a report written), giving the exit status."""
    timer = threading.Timer(budget + grace(budget), _fire,
                            args=(nodeid, ids, budget, packages, threading.get_ident(), finish))
    timer.daemon = True
    timer.name = "weightsync-conformance-backstop"
    timer.start()
    return timer


def grace(budget: float) -> float:
    return min(GRACE * tm.SCALE, budget / 4)


def verdict(frames, packages: frozenset[str], budget: float) -> dict:
    """The outcome, blamed IDs and reason of a test whose thread is in `frames` (outermost first)."""
    call = call_in(frames, packages)
    past = f"it ran {budget + grace(budget):.0f} s, past the suite's budget of {budget:.0f} s for it"
    if call is not None:
        return {"outcome": VIOLATED, "blamed": [call],
                "reason": f"{call} violated: the implementation's call never returned and did not let the suite's "
                          f"timeout stop it ({past}); the process running the test was ended"}
    return {"outcome": INCONCLUSIVE, "blamed": [],
            "reason": f"the test did not end and did not let the suite's timeout stop it, outside any call of the "
                      f"implementation ({past}); the process running it was ended"}


def _fire(nodeid: str, ids: list[str], budget: float, packages: frozenset[str], ident: int,
          finish: Callable[[dict], int] | None) -> None:
    frames = stack_of(ident)
    stack = traceback.extract_stack(frames[0]) if frames else []
    record = {"nodeid": nodeid, "ids": ids, **verdict(frames[::-1], packages, budget),
              "details": "".join(traceback.format_list(stack[-15:]))}
    sys.stderr.write(f"\nweightsync conformance: {nodeid}: {record['reason']}\n{record['details']}\n")
    sys.stderr.flush()
    status = EXIT
    if finish is not None:
        _thread.interrupt_main()  # -n 0: the run ends as Ctrl-C ends it, its report written
        threading.Event().wait(grace(budget))
        _end_pools()  # still here: the interrupt was swallowed too
        status = finish(record)
    else:
        _end_pools()
        folder = os.environ.get(ENV)
        if folder:
            (Path(folder) / f"{os.getpid()}.json").write_text(json.dumps(record))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()  # os._exit drops what a buffer holds: the report just written included
        except (OSError, ValueError):
            pass
    os._exit(status)


def _end_pools() -> None:
    for pool in list(_pools):
        for w in pool._all():
            try:
                w.kill()
            except Exception:  # noqa: BLE001 - ending what is left, whatever state it is in
                pass


def found(nodeid: str) -> dict | None:
    """In the controlling process: the verdict a watch left for `nodeid`, if one did."""
    folder = os.environ.get(ENV)
    if not folder:
        return None
    for path in Path(folder).glob("*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if record.get("nodeid") == nodeid:
            path.unlink(missing_ok=True)
            return record
    return None
