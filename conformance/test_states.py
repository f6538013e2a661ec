"""Sections 4, 8, 9 and 10: every sender call that names receivers, with one receiver in each state of the
sender's table, as the call's target and beside it.

The sender's table (spec/04-state-machines.md) puts each receiver in one of five states while the sender runs:
unconnected, connecting, live, failed and gone. Each call says what it does in each: a send refuses a target
that is not live (SEND-4) and goes on for the others (SEND-1), connect() waits for the receivers not live and
names a failure once (INIT-5), drop() cuts off a connecting or live receiver and leaves the others as they are
(API-9), handle() gives a new channel to any but a live one (SM-S-5, LIFE-2, LIFE-3). Each test puts receiver 0
in one state (`STATES`), with receiver 1 live beside it, makes every call that leaves the states as they are
(`_probe`), then one that changes receiver 0's (`THEN`) and checks where it went. A binding that takes one state
for its neighbour in the table (connecting for unconnected, gone for failed, a receiver gone while connecting for
one gone once live), or that is right for a call's target and wrong for the receiver beside it, meets its case
here, for every call at once, rather than where someone thought of it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from . import strategies as S
from . import timing as tm
from .bounds import HarnessError, bounded
from .clauses import occurred
from .model import describe
from .rig import Background, expect_error, waited
from .verdict import TooSlow, in_time


def basic(seed=0):
    return S.distinct_weights(S.BASIC_SPEC, seed)


#: What a send (or send_async) naming receiver 0 must raise in each state (SEND-4); None: it goes through.
REFUSAL = {"unconnected": "LocalProtocolError", "connecting": "LocalProtocolError", "live": None,
           "failed": "ReceiverError", "gone": "ReceiverDiedError", "gone while connecting": "ReceiverDiedError",
           "dropped": "ReceiverDiedError"}
#: The cause a refusal names receiver 0 with (SEND-7), where it names one.
CAUSES = {"failed": {"error", "violation"}, "gone": {"died"}, "gone while connecting": {"died"}, "dropped": {"died"}}
#: Where drop(0) takes each state (API-9): a connecting or live receiver is cut off; the rest stay as they are.
AFTER_DROP = {"unconnected": "unconnected", "connecting": "dropped", "live": "dropped", "failed": "failed",
              "gone": "gone", "gone while connecting": "gone while connecting", "dropped": "dropped"}


@dataclass
class Case:
    """A sender of two receivers, made in this process: receiver 1 live, receiver 0 in `state`."""

    ws: object
    state: str
    sender: object
    r1: object
    r0: object | None = None
    version: int = 0  # the sender's latest published version, as the test knows it
    urls: list[str] | None = None  # receivers join by these URLs (a listening sender), else by handles
    others: list = field(default_factory=list)  # receiver objects of receiver 0 replaced since (closed at the end)
    threads: list[Background] = field(default_factory=list)  # a refused receiver's connect(), ended by the close

    def close(self) -> None:
        for r in [self.r0, *self.others, self.r1]:
            if r is not None:
                r.close()
        self.sender.close()
        for t in self.threads:
            t.join(tm.REACTION)


def _connect(case: Case, receivers: dict[int, object], workers: list[int], ids: str) -> None:
    """`receivers` (id -> an object made on its handle) connect in threads while sender.connect(T, workers=...)
    runs here; each must return the latest version, the one its Init carried (LIFE-1, INIT-4)."""
    joins = {i: Background(lambda r=r: r.connect(tm.T), f"conformance-receiver-{i}") for i, r in receivers.items()}
    try:
        bounded(case.sender.connect, tm.T, workers=workers, limit=tm.T + tm.SLACK,
                what=f"sender.connect(T, workers={workers})")
    except (HarnessError, case.ws.SyncTimeoutError) as e:
        raise TooSlow(f"{ids} violated: receivers {sorted(receivers)} did not connect: {e}") from None
    except case.ws.WeightSyncError as e:
        raise AssertionError(f"{ids} violated: sender.connect(workers={workers}) with healthy receivers "
                             f"{sorted(receivers)} raised {type(e).__name__}: {e}") from None
    for i, join in joins.items():
        outcome = join.join(tm.T + tm.SLACK)
        in_time(outcome is not None, f"{ids} violated: receiver {i}'s connect() did not return")
        assert outcome == ("ok", case.version), (
            f"{ids} violated: receiver {i}, connected after version {case.version} was published, connected with "
            f"{outcome} (LIFE-1: the latest version)")


def _address(case: Case, i: int):
    """What a process needs to be receiver i: its URL (the same for the sender's life, RDV-2), or a handle."""
    return case.urls[i] if case.urls is not None else case.sender.handle(i)


def _enter(ws, state: str, urls: bool = False) -> Case:
    """A Case with receiver 0 in `state`, each reached as a user would reach it; with `urls`, every receiver
    joins a listening sender by its URL."""
    listen = {"listen": f"unix:@conformance-states-{os.getpid()}-{time.monotonic_ns()}"} if urls else {}
    sender = ws.Sender(basic(0), 2, **listen)
    case = Case(ws, state, sender, None, urls=[sender.url(0), sender.url(1)] if urls else None)
    try:
        case.r1 = ws.Receiver(_address(case, 1))
        if state in ("live", "gone", "dropped"):
            case.r0 = ws.Receiver(_address(case, 0))
            _connect(case, {0: case.r0, 1: case.r1}, [0, 1], "INIT-4")
        else:
            _connect(case, {1: case.r1}, [1], "INIT-4")
        if state in ("connecting", "gone while connecting"):
            case.r0 = ws.Receiver(sender.handle(0))  # made on its handle, never connecting: the Init waits unread
            expect_error(ws, "SyncTimeoutError", sender.connect, tm.SHORT, workers=[0], ids="INIT-5",
                         what="sender.connect(SHORT, workers=[0]), receiver 0 silent", naming=[0],
                         limit=tm.SHORT + tm.SLACK)
        if state == "gone while connecting":
            case.r0.close()  # its end closes: the sender's next connect() names it gone, once (INIT-5)
            expect_error(ws, "ReceiverDiedError", sender.connect, tm.T, ids="INIT-5",
                         what="sender.connect(T) after receiver 0, connecting, closed", naming=[0])
        elif state == "failed":
            case.r0 = ws.Receiver(_address(case, 0), S.basic_mismatching_target())
            case.threads.append(Background(lambda: case.r0.connect(tm.T), "conformance-receiver-0"))
            # connect() names it whether the sender read its Ready(error) before the call or during it (INIT-5)
            expect_error(ws, "ReceiverError", sender.connect, tm.T, ids="INIT-3",
                         what="sender.connect(T), receiver 0's target mismatching", naming=[0])
        elif state == "gone":
            case.r0.close()  # a send then finds it gone, refused at once or failing in its wait (SEND-3, SEND-4)
            expect_error(ws, "ReceiverDiedError", sender.send, basic(1), workers=[0], timeout=tm.T, ids="SEND-3",
                         what="send(workers=[0]) after receiver 0 closed", naming=[0])
            case.version = sender.version
        elif state == "dropped":
            _drop(case)
    except BaseException:
        case.close()
        raise
    return case


def _drop(case: Case) -> None:
    try:
        bounded(case.sender.drop, 0, tm.T, limit=tm.T + tm.SLACK, what="sender.drop(0, T)")
    except HarnessError as e:
        raise TooSlow(f"API-9 violated: {e}") from None
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"API-9 violated: drop(0) of a receiver {case.state} raised {type(e).__name__}: "
                             f"{e}") from None


def _send_all(case: Case, state: str, call: str, ids: str) -> None:
    """send() or send_async() without workers, so naming receiver 0: refused as receiver 0's state says, or
    published and acked by both (SEND-1, SEND-4, VER-2)."""
    ws, sender = case.ws, case.sender
    k = case.version + 1
    fn = sender.send if call == "send" else sender.send_async
    what = f"{call}() without workers, receiver 0 {state}"
    refusal = REFUSAL[state]
    if refusal is None:
        try:
            got = bounded(fn, basic(k), timeout=tm.T, limit=tm.T + tm.SLACK, what=what)
        except (HarnessError, ws.SyncTimeoutError) as e:
            raise TooSlow(f"SEND-1 violated: {what}: {e}") from None
        except ws.WeightSyncError as e:
            raise AssertionError(f"SEND-1 violated: {what} raised {type(e).__name__}: {e}") from None
        v = got if call == "send" else waited(got, "SEND-5", what=f"wait(T) on {what}")
        assert v == k, f"VER-1 violated: {what} gave version {v}, the one after {case.version} expected"
        case.version = v
        return
    e = expect_error(ws, refusal, fn, basic(k), timeout=tm.T, ids=ids, what=what,
                     naming=None if refusal == "LocalProtocolError" else [0])
    if call == "send_async":
        occurred("SEND-4.g")
    if refusal != "LocalProtocolError":
        assert e.version is None, f"SEND-4 violated: {what} raised {refusal} with .version {e.version}, not None"
        assert set(e.causes.values()) <= CAUSES[state], (
            f"SEND-4 violated: {what} named receiver 0 with causes {e.causes}; receiver 0 is {state}")
    assert sender.version == case.version, (
        f"VER-2 violated: {what} was refused ({refusal}) yet moved the version from {case.version} to "
        f"{sender.version}")


def _send_beside(case: Case, state: str) -> None:
    """send(workers=[1]): receiver 1 gets it and holds it when the send returns, whatever receiver 0's state."""
    ws = case.ws
    what = f"send(workers=[1]), receiver 0 {state}"
    try:
        v = bounded(case.sender.send, basic(case.version + 1), workers=[1], timeout=tm.T, limit=tm.T + tm.SLACK,
                    what=what)
    except (HarnessError, ws.SyncTimeoutError) as e:
        raise TooSlow(f"SEND-1 violated: {what}: {e}") from None
    except ws.WeightSyncError as e:
        raise AssertionError(f"SEND-1 violated: {what} raised {type(e).__name__}: {e}") from None
    assert v == case.version + 1, f"VER-1 violated: {what} gave version {v}, the one after {case.version} expected"
    case.version = v
    if state != "live":
        occurred("SEND-1.d")
    assert case.r1.version == v and describe(case.r1.weights) == describe(basic(v)), (
        f"ACK-3 violated: receiver 1 acked version {v} ({what}) but holds version {case.r1.version}")


def _connect_returns(case: Case, state: str, workers, ids: str) -> None:
    """connect(SHORT, workers=...) with nothing to wait for returns within its bound, naming nobody."""
    what = f"sender.connect(SHORT, workers={workers}), receiver 0 {state}"
    try:
        bounded(case.sender.connect, tm.SHORT, workers=workers, limit=tm.SHORT + tm.SLACK, what=what)
    except HarnessError as e:
        raise TooSlow(f"{ids} violated: {e}") from None
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"{ids} violated: {what} raised {type(e).__name__}: {e}; nothing is left to connect "
                             "there") from None


def _probe(case: Case, state: str) -> None:
    """Every call that leaves receiver 0's state as it is, made in that state."""
    ws = case.ws
    _send_all(case, state, "send", "SEND-4")
    _send_all(case, state, "send_async", "SEND-4")
    _send_beside(case, state)
    if state == "connecting":  # still waited for: named by a connect() that names it, by default or by id
        for workers in (None, [0]):
            expect_error(ws, "SyncTimeoutError", case.sender.connect, tm.SHORT, workers=workers, ids="INIT-5",
                         what=f"sender.connect(SHORT, workers={workers}), receiver 0 connecting", naming=[0],
                         limit=tm.SHORT + tm.SLACK)
    elif state != "unconnected":  # live, or a failure already named (INIT-5: once), or gone once live: nothing
        _connect_returns(case, state, None, "INIT-5")
        if state != "live":
            occurred("INIT-5.l")
    if state == "live":
        _connect_returns(case, state, [0], "INIT-5")  # a named receiver that is live is left as it is
    _connect_returns(case, state, [1], "INIT-5")
    if state != "live":
        occurred("INIT-5.m")
    _send_beside(case, state)


def _restart(case: Case, state: str, handle) -> None:
    """A new receiver 0 on `handle` connects at the latest version, and a send to both goes through (LIFE-2)."""
    if case.r0 is not None:
        case.others.append(case.r0)
    case.r0 = case.ws.Receiver(handle)
    _connect(case, {0: case.r0}, [0], "LIFE-2")
    _send_all(case, "live", "send", "LIFE-2")
    assert case.r0.version == case.version and describe(case.r0.weights) == describe(basic(case.version)), (
        f"LIFE-2 violated: receiver 0, restarted after it was {state}, acked version {case.version} but holds "
        f"version {case.r0.version}")


def _then_drop(case: Case, state: str) -> None:
    """drop(0): a connecting or live receiver is gone from then on; any other state stays as it was (API-9)."""
    _drop(case)
    after = AFTER_DROP[state]
    _send_all(case, after, "send", "API-9")
    _send_all(case, after, "send_async", "API-9")
    _send_beside(case, after)
    if after == "unconnected":  # it connects later as usual, on the handle or URL it always had
        _restart(case, state, _address(case, 0))


def _then_handle(case: Case, state: str) -> None:
    """handle(0): refused for a live receiver (LIFE-3); any other state gets a handle that restarts it (SM-S-5)."""
    ws = case.ws
    what = f"sender.handle(0), receiver 0 {state}"
    if state == "live":
        expect_error(ws, "LocalProtocolError", case.sender.handle, 0, ids="LIFE-3", what=what, limit=tm.SLACK)
        _send_all(case, "live", "send", "LIFE-3")
        return
    try:
        handle = bounded(case.sender.handle, 0, limit=tm.SLACK, what=what)
    except HarnessError as e:
        raise TooSlow(f"SM-S-5 violated: {e}") from None
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"SM-S-5 violated: {what} raised {type(e).__name__}: {e}") from None
    _send_all(case, "unconnected", "send", "SM-S-5")  # reset to unconnected: not connected, so refused
    if state != "unconnected":
        occurred("SM-S-5.f")
    _restart(case, state, handle)


def _then_rejoin(case: Case, state: str) -> None:
    """A new process with receiver 0's URL, which is the URL it always had (RDV-2): refused while receiver 0 is
    live (RDV-5), which goes on as before; in any other state it takes receiver 0's place at the latest version
    (RDV-5, LIFE-2)."""
    assert case.urls is not None, "a rejoin is by URL"
    url = bounded(case.sender.url, 0, limit=tm.SLACK, what="sender.url(0)")
    assert url == case.urls[0], f"RDV-2 violated: receiver 0's URL changed once it was {state}: {url!r}"
    if state != "live":
        _restart(case, state, url)
        return
    newcomer = case.ws.Receiver(url)
    case.others.append(newcomer)
    expect_error(case.ws, "RefusedError", newcomer.connect, tm.T, ids="RDV-5",
                 what="connect() of a second process with the URL of live receiver 0")
    _send_all(case, "live", "send", "RDV-5")


THEN: dict[str, Callable[[Case, str], None]] = {"drop": _then_drop, "handle": _then_handle, "rejoin": _then_rejoin}
STATES = list(REFUSAL)
#: The states a receiver joining by URL reaches through the binding alone (connecting needs a joiner that holds
#: its Ready: test_rendezvous.py's scripted joiners cover it).
URL_STATES = ["unconnected", "live", "failed", "gone", "dropped"]


def _needs(state: str, then: str) -> tuple[str, ...]:
    needs = ["push"]
    if state == "failed":
        needs.append("mapping")  # its target is a mapping of the wrong shape
    if state == "dropped" or then == "drop":
        needs.append("drop")
    return tuple(needs)


@pytest.mark.req("SEND-4", "SEND-1", "SEND-5", "VER-2", "INIT-5", "API-9", "SM-S-5", "LIFE-2", "LIFE-3", "LIFE-1")
@pytest.mark.parametrize("state,then", [pytest.param(s, t, id=f"{s}-then-{t}".replace(" ", "_"),
                                                     marks=pytest.mark.needs(*_needs(s, t)))
                                        for s in STATES for t in ("drop", "handle")])
def test_each_call_with_one_receiver_in_each_state(ws, state, then):
    case = _enter(ws, state)
    try:
        _probe(case, state)
        THEN[then](case, state)
    finally:
        case.close()


@pytest.mark.req("SEND-4", "SEND-1", "SEND-5", "VER-2", "INIT-5", "API-9", "RDV-2", "RDV-5", "LIFE-2", "LIFE-1")
@pytest.mark.parametrize("state,then", [pytest.param(s, t, id=f"{s}-then-{t}".replace(" ", "_"),
                                                     marks=pytest.mark.needs("rendezvous", *_needs(s, t)))
                                        for s in URL_STATES for t in ("drop", "rejoin")])
def test_each_call_with_one_receiver_in_each_state_joining_by_url(ws, state, then):
    """The same sweep on a listening sender whose receivers join by URL: the calls behave as with handles, and
    the URL restarts receiver 0 whatever ended it."""
    case = _enter(ws, state, urls=True)
    try:
        _probe(case, state)
        THEN[then](case, state)
    finally:
        case.close()
