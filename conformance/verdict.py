"""What a failed check means: a violated requirement, a bound missed on a slow machine, or no verdict.

The suite reports each test as one of four outcomes (docs/conformance.md):

- **passed**;
- **violated**: the implementation broke a MUST; the failure names the requirement
  (`"ACK-3 violated: ..."`), and only that requirement is blamed;
- **inconclusive**: the suite could not decide: its own harness failed (a worker process
  did not start or died), a check failed without naming a requirement, or a bound was
  missed at the first timescale and held at the larger one of the re-check;
- **not implemented**: the test needs a capability the implementation does not declare.

A fifth, **checked nothing**, is for a test that ran and found nothing wrong, but whose
condition never occurred (the receiver read the slot before the sender could have written
it, the implementation ran no Python lines to interrupt): it says nothing either way, and
is never counted as passed (`checked_nothing`).

A failure that is only about time (`TooSlow`: a bound missed, never a wrong value, a
wrong error or a call that ended too early) is run once more at `timing.RECHECK` times
the bounds before it may count as a violation. `TooSlow` and `Inconclusive` derive from
BaseException so that no `except Exception` in the suite's own code swallows them, and so
that Hypothesis passes them through instead of shrinking and replaying an example whose
outcome depends on the machine's speed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ID = r"[A-Z]+(?:-[A-Z])?-\d+"
#: "ACK-3 violated" or "SEND-1, ACK-1 violated" at the start of a failure's message, or after
#: the prefix of a re-raised one ("... violated (API-7): ...").
VIOLATED_RE = re.compile(rf"\b((?:{ID})(?:, {ID})*) violated\b")

PASSED, VIOLATED, INCONCLUSIVE, NOT_IMPLEMENTED = "passed", "violated", "inconclusive", "not implemented"
#: The test ran, every check held, and the condition it exists to make true never occurred.
CHECKED_NOTHING = "checked nothing"
#: Not an outcome about the implementation: the test could not run here (no GPU), or a
#: program mode leaves it out.
SKIPPED = "skipped"
#: A violation of a gap the user listed as known (--xfails-file): reported, not failing the run; and a
#: listed test that passed after all.
XFAIL, XPASS = "xfail", "xpass"


class Undecided(BaseException):
    """A failure that is not, or not yet, a verdict on the implementation."""


class Inconclusive(Undecided):
    """The suite could not decide (its harness failed); blames nothing."""


class WorkerLost(Inconclusive):
    """A worker process could not start, or died while the suite waited for its answer."""


class TooSlow(Undecided):
    """A bound was missed: re-checked at a larger timescale before it counts as a violation.

    The message names the requirement whose bound was missed ("SEND-2 violated: ..."),
    except from the harness's own waits (HarnessError) until a test names one."""


class HarnessError(TooSlow):
    """A wait of the harness ran out: a bounded call did not return, a worker did not answer."""


def checked_nothing(why: str) -> None:
    """Ends the running test as *checked nothing*, saying why: its condition did not occur in this run, so a
    pass would claim what nothing showed. Not a verdict: it neither fails the run nor counts as passed."""
    import pytest

    pytest.skip(f"{CHECKED_NOTHING}: {why}")


def in_time(ok: bool, message: str) -> None:
    """A check about time alone: raise TooSlow(message) unless `ok`."""
    if not ok:
        raise TooSlow(message)


def named(text: str) -> list[str]:
    """The requirement IDs a failure message says are violated, in the order it names them."""
    out: list[str] = []
    for group in VIOLATED_RE.findall(text):
        for i in group.split(", "):
            if i not in out:
                out.append(i)
    return out


#: The requirement that an unexpected error from a binding call breaks: the call's own contract.
CALL_IDS = {("Sender", "__init__"): "API-1", ("Receiver", "__init__"): "API-3", ("Sender", "close"): "LIFE-4",
            ("Receiver", "close"): "LIFE-5", "send": "SEND-1", "send_async": "SEND-5", "wait": "SEND-5",
            "done": "API-2", "connect": "INIT-4", "handle": "LIFE-2", "url": "RDV-1", "drop": "API-9",
            "poll": "API-3", "reading": "CONS-2", "__enter__": "CONS-2", "pack": "API-8",
            ("Handle", "__reduce__"): "LIFE-2"}


def implementation_packages(ws) -> frozenset[str]:
    """Top-level packages of the implementation: its module's, and those of its classes and their bases
    (a shim's or a mutant's code calls into them)."""
    names = {ws.__name__.split(".")[0]}
    for attr in ("Sender", "Receiver", "WeightSyncError"):
        cls = getattr(ws, attr, None)
        for base in getattr(cls, "__mro__", ()):
            names.add(base.__module__.split(".")[0])
    return frozenset(names - {"builtins", "conformance"})


def implementation_call(exc: BaseException, packages: frozenset[str]) -> str | None:
    """The requirement of the outermost binding call in `exc`'s traceback that raised it, if it came out of
    the implementation: an error where the spec expects the call to succeed breaks that call's contract."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return call_in(frames, packages)


def call_in(frames, packages: frozenset[str]) -> str | None:
    """The requirement of the outermost frame of `frames` (outermost first) that runs the implementation's code."""
    for frame in frames:
        if frame.f_globals.get("__name__", "").split(".")[0] in packages:
            name = frame.f_code.co_name
            owner = frame.f_locals.get("self")
            kinds = [c.__name__ for c in type(owner).__mro__] if owner is not None else []
            for kind in kinds:
                if (kind, name) in CALL_IDS:
                    return CALL_IDS[(kind, name)]
            return CALL_IDS.get(name) or ("API-2" if any("Sender" in k for k in kinds) else "API-3")
    return None


@dataclass(frozen=True)
class Judgement:
    """What one exception says: `kind` is VIOLATED, "timing" (to be re-checked) or INCONCLUSIVE."""

    kind: str
    ids: tuple[str, ...]
    reason: str


def _leaves(e: BaseException) -> list[BaseException]:
    if isinstance(getattr(e, "exceptions", None), (list, tuple)):  # an exception group (Hypothesis)
        return [leaf for sub in e.exceptions for leaf in _leaves(sub)]
    if e.__context__ is not None and any(c.__name__ == "Flaky" for c in type(e).__mro__):
        # Hypothesis replayed an example that failed and the replay drew differently (a step that timed
        # out on a busy machine led the model elsewhere): the first run's error is what happened.
        return _leaves(e.__context__)
    return [e]


def _text(e: BaseException) -> str:
    first = str(e).strip().splitlines()
    return f"{type(e).__name__}: {first[0] if first else ''}"


def judge(exc: BaseException, timeout_types: tuple[type, ...] = (), packages: frozenset[str] = frozenset()) -> Judgement:
    """Judge a test's exception; inside an exception group (Hypothesis), a violation wins over time.

    `timeout_types`: the implementation's SyncTimeoutError. A call that was expected to
    succeed and timed out without the test catching it is a matter of time, like TooSlow,
    under the requirement of the binding call it came out of (CALL_IDS).
    `packages`: the implementation's (implementation_packages); an error that came out of one
    of its calls, which no check caught, violates that call's requirement (CALL_IDS).
    """
    verdicts = [_judge_one(e, timeout_types, packages) for e in _leaves(exc)]
    for kind in (VIOLATED, "timing", INCONCLUSIVE):
        hits = [v for v in verdicts if v.kind == kind]
        if hits:
            ids = tuple(dict.fromkeys(i for v in hits for i in v.ids))
            return Judgement(kind, ids, "; ".join(v.reason for v in hits))
    return Judgement(INCONCLUSIVE, (), _text(exc))  # pragma: no cover - an empty group


def _judge_one(e: BaseException, timeout_types: tuple[type, ...], packages: frozenset[str]) -> Judgement:
    text = str(e)
    if isinstance(e, Inconclusive):
        return Judgement(INCONCLUSIVE, (), _text(e))
    if isinstance(e, TooSlow) or (timeout_types and isinstance(e, timeout_types)):
        ids = named(text)
        call = None if ids or isinstance(e, TooSlow) else implementation_call(e, packages)
        if call is not None:
            # The implementation's own timeout out of a call the test expected to succeed: that call's contract is
            # what it missed, so a miss the re-check repeats violates it (unnamed, it could only be inconclusive).
            return Judgement("timing", (call,), f"{type(e).__name__}: {call} violated: the call timed out where the "
                                                f"spec expects it to succeed ({_text(e)})")
        return Judgement("timing", tuple(ids), _text(e))
    if type(e).__name__ == "Failed" and text.startswith("Timeout"):
        # pytest-timeout at the suite's budget for the test (timing.budget): the re-check had its room inside it,
        # so this is a hang, judged where it happened.
        call = implementation_call(e, packages)
        if call is not None:
            return Judgement(VIOLATED, (call,), f"{call} violated: the implementation's call never returned: the test "
                                                f"ran past the suite's budget for it inside that call ({_text(e)})")
        return Judgement(INCONCLUSIVE, (), f"the test ran past the suite's budget for it outside any call of the "
                                           f"implementation (the suite's own wait hung: {_text(e)})")
    ids = named(text)
    if ids:
        return Judgement(VIOLATED, tuple(ids), _text(e))
    call = getattr(getattr(e, "error", None), "call", None) or implementation_call(e, packages)
    if call is not None and isinstance(e, Exception):
        return Judgement(VIOLATED, (call,), f"the implementation raised, where the spec expects its call to "
                                            f"succeed: {_text(e)}")
    return Judgement(INCONCLUSIVE, (), f"a check failed without naming a requirement ({_text(e)}): "
                                       "a gap in the suite, please report it")


def missed_again(reason: str, first: str, scale: float, busy_scale: float, measure: dict) -> BaseException:
    """The verdict on a check that missed a bound at its re-check, at timescale `scale`, too: a violation of what
    `reason` names, unless the machine, measured just after (`measure`, timing.calibrate; `busy_scale`, the
    timescale timing.scale_for gives it), needs twice that timescale or more. A process that gets a sliver of a
    core (a nice'd run beside busy ones) misses any bound, and that says nothing about the implementation; the
    factor 2 keeps a machine only as busy as the re-check allowed for (two suites on two cores) from hiding one."""
    seen = f"load {measure['load']:.1f} and a socket round trip of {measure['rtt_ms']:.2f} ms measured just after"
    if busy_scale >= 2 * scale:
        return Inconclusive(f"a bound was missed again at timescale {scale:g} ({reason}), but the machine was far "
                            f"busier than that allows ({seen}: timescale {busy_scale:g}); the first run: {first}")
    return AssertionError(f"{reason.partition(': ')[2]} (missed again when re-checked at timescale {scale:g}, "
                          f"{seen}; the first run: {first})")

