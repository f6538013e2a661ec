"""The re-check: a test that failed only on time runs again with larger bounds before it may count as violated.

A slow or busy machine misses bounds, and that says nothing about the implementation (verdict.TooSlow). So such
a failure is not reported at once: the test function runs again, first at the timescale the machine has now when
it is busier than the run allowed for, then at timing.RECHECK times every bound. The runs go through pytest's own
call hook (`Item.runtest`) with the fixtures of the first run, after undoing what that run left (`on_cleanup`).
"""

from __future__ import annotations

import time

import pytest

from . import timing as tm
from .selection import budget
from .subject import judged
from .verdict import Inconclusive, missed_again

#: What to undo before the test function runs again (its fixtures' rigs and peers), in order of registration.
CLEANUPS = pytest.StashKey[list]()
#: What the first run missed, once the test was re-checked at the larger timescale (for its report).
RECHECKED = pytest.StashKey[str]()
#: Set while the re-check runs the test again: that call is passed through here and judged by the re-check.
_AGAIN = pytest.StashKey[bool]()


def on_cleanup(request, fn) -> None:
    """Run `fn` before a re-check of this test (and at its teardown, by the fixture itself)."""
    request.node.stash.setdefault(CLEANUPS, []).append(fn)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """A failure that is only about time is run again: first, when the machine measured now is busier than the
    run's timescale allows, at the timescale it has now (held there: passed, as if the run had started now); then
    at tm.RECHECK times every bound (or that timescale, if larger).

    Held at the larger scale: inconclusive (the machine was too slow for the first one).
    Failing again: a violation, of what the second failure names."""
    if pyfuncitem.stash.get(_AGAIN, False):
        return (yield)  # a run of the re-check below, which judges it
    started = time.monotonic()
    try:
        return (yield)
    except BaseException as first:  # noqa: BLE001 - judged, then re-raised or re-checked
        j = judged(first, pyfuncitem.config)
        if j.kind != "timing":
            raise
        first_text = j.reason
    took = time.monotonic() - started
    # The load the test met, measured now: busier than the run's timescale allows, the test runs again at the
    # timescale the machine has now, as if the run had started now (its first measure is half a second's).
    given = pyfuncitem.config._conformance_measure.get("timescale_given", 1.0)
    busy, recheck = tm.reruns(tm.SCALE, given * tm.scale_for(tm.calibrate()))
    if busy is not None and not tm.fits(took, busy + recheck if busy < recheck else busy, budget(pyfuncitem)):
        busy = None  # the hang budget holds the re-check only: a test is never called hung for being re-run
    if busy is not None:
        _clean(pyfuncitem)
        with tm.scaled(busy):
            scale = tm.SCALE
            try:
                _run_again(pyfuncitem)
                pyfuncitem.user_properties.append(("timescale_measured_during_the_test", scale))
                return None
            except BaseException as again:  # noqa: BLE001
                j2 = judged(again, pyfuncitem.config)
                if j2.kind != "timing":
                    raise
                if busy >= recheck:  # that run was as generous as the re-check: it is the re-check
                    pyfuncitem.stash[RECHECKED] = first_text
                    _missed_again(j2, first_text, scale, again)
    _clean(pyfuncitem)
    pyfuncitem.stash[RECHECKED] = first_text
    with tm.scaled(recheck):
        scale = tm.SCALE
        try:
            _run_again(pyfuncitem)
        except BaseException as second:  # noqa: BLE001
            _missed_again(judged(second, pyfuncitem.config), first_text, scale, second)
    raise Inconclusive(f"only a bound was missed ({first_text}); re-checked at timescale {scale:g}, it held. "
                       f"The machine was too busy for timescale {scale / tm.RECHECK:g}: re-run with "
                       f"--conformance-timescale={tm.RECHECK:g}")


def _run_again(item) -> None:
    """The test function once more, as pytest calls it (`Item.runtest`: the call hook, the first run's fixtures)."""
    item.stash[_AGAIN] = True
    try:
        item.runtest()
    finally:
        item.stash[_AGAIN] = False


def _missed_again(j, first_text: str, scale: float, exc: BaseException) -> None:
    """Raises the verdict on a re-run that failed too: on time again, by missed_again; anything else, as it is."""
    if j.kind == "timing" and j.ids:
        now = tm.calibrate()
        raise missed_again(j.reason, first_text, scale, tm.scale_for(now), now) from exc
    raise exc


def _clean(item) -> None:
    """What the last run of a test left (its rigs, peers, workers' state), undone before it runs again."""
    for cleanup in item.stash.get(CLEANUPS, []):
        try:
            cleanup()
        except BaseException:  # noqa: BLE001 - a stuck object of the first run: the re-check starts anew
            pass
