"""Section 10 (API-7): every call of the binding that takes a timeout, at the edges of its range.

A timeout is None or a number >= 0. A negative one is refused with ValueError before the call changes anything;
a timeout of 0 bounds every wait at zero, so a call that need not wait goes on and one that must wait raises
SyncTimeoutError at once. Each edge is one test over the table `CALLS`, so a call is never left out of an edge
because no one thought of it there: a binding that reads 0 as "no timeout" (0 is falsy), checks the sign in some
calls only, or gives up at 0 before it looks at what has already arrived, meets each case.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from . import strategies as S
from . import timing as tm
from .bounds import HarnessError, bounded
from .clauses import occurred
from .rig import Background, connect_here, waited
from .verdict import TooSlow, in_time


def basic(seed=0):
    return S.distinct_weights(S.BASIC_SPEC, seed)


@dataclass
class Ends:
    """One sender and its one receiver, made in this process; `future` is a send_async's, where a row needs one."""

    ws: object
    sender: object
    receiver: object
    connected: bool = False
    future: object = None
    release: Callable[[], None] | None = None  # lets what the call under test waits for happen
    joined: Background | None = None  # a receiver's connect() let go by `release`
    threads: list = field(default_factory=list)  # started by the test: joined (bounded) before the ends close

    def close(self) -> None:
        for t in self.threads:  # a reader let go leaves its block before the receiver closes
            t.join(tm.SLACK)
        self.receiver.close()
        self.sender.close()
        for t in self.threads:  # a call still waiting ends with the close
            t.join(tm.REACTION)


@dataclass(frozen=True)
class Call:
    """A call that takes a timeout: how a caller writes it, what the binding must declare for it, the receiver's
    mode, whether it is made on a connected pair, and `run(ends, timeout)`, the call itself."""

    name: str
    needs: tuple[str, ...]
    mode: str
    connected: bool
    run: Callable[[Ends, float], object]
    pending: bool = False  # a version is published (send_async) before the call
    acked: bool = False  # and acked by the receiver, `wait(T)` returned, before the call

    def param(self):
        return pytest.param(self, id=self.name, marks=pytest.mark.needs(*self.needs))


def _reading(ends: Ends, timeout: float) -> str:
    with ends.receiver.reading(timeout):
        return "entered"


#: Every call of sections 10.1 and 10.2 that takes a timeout.
CALLS = [
    Call("sender.connect(timeout)", ("push",), "push", False, lambda e, t: e.sender.connect(t)),
    Call("receiver.connect(timeout)", ("push",), "push", False, lambda e, t: e.receiver.connect(t)),
    Call("sender.send(timeout=)", ("push",), "push", True, lambda e, t: e.sender.send(basic(7), timeout=t)),
    Call("sender.send_async(timeout=)", ("push",), "push", True, lambda e, t: e.sender.send_async(basic(7), timeout=t)),
    Call("future.wait(timeout)", ("push",), "push", True, lambda e, t: e.future.wait(t), pending=True),
    Call("future.wait(timeout), acked", ("push",), "push", True, lambda e, t: e.future.wait(t), pending=True,
         acked=True),
    Call("sender.drop(i, timeout)", ("push", "drop"), "push", True, lambda e, t: e.sender.drop(0, t)),
    Call("receiver.reading(timeout)", ("push",), "push", True, _reading),
    Call("receiver.poll(timeout)", ("pull",), "pull", True, lambda e, t: e.receiver.poll(t), pending=True),
]


def _ends(ws, call: Call, *, pending: bool = True) -> Ends:
    """The pair `call` is made on; `pending=False` leaves out the version a row publishes before the call."""
    sender = ws.Sender(basic(0), 1)
    try:
        receiver = ws.Receiver(sender.handle(0), **({} if call.mode == "push" else {"mode": call.mode}))
    except BaseException:
        sender.close()
        raise
    ends = Ends(ws, sender, receiver)
    try:
        if call.connected:
            _connect(ends)
        if call.pending and pending:
            ends.future = ends.sender.send_async(basic(1), timeout=tm.T)
        if call.acked and pending:
            waited(ends.future, "SEND-5", what="wait(T) on the version, before the call")
    except BaseException:
        ends.close()
        raise
    return ends


def _connect(ends: Ends) -> None:
    connect_here(ends.ws, ends.sender, [ends.receiver], "a healthy receiver in this process")
    ends.connected = True


#: A receiver version not checked: a push receiver may apply a pending version at any moment.
UNKNOWN = object()


def _still_works(ends: Ends, call: Call, published: int, held: object) -> None:
    """After a refused call: nothing it would have done was done (no version published, none applied, the receiver
    neither connected nor dropped), and the pair goes on as if the call had never been made."""
    ws, sender, receiver = ends.ws, ends.sender, ends.receiver
    assert sender.version == published, (
        f"API-7 violated: {call.name} with a negative timeout raised ValueError but published: sender.version went "
        f"from {published} to {sender.version}; a refused call changes nothing")
    assert held is UNKNOWN or receiver.version == held, (
        f"API-7 violated: {call.name} with a negative timeout raised ValueError but the receiver's version went from "
        f"{held} to {receiver.version}; a refused call changes nothing")
    if not ends.connected:
        _connect(ends)
    if call.pending and call.mode == "pull":
        got = bounded(receiver.poll, tm.T, limit=tm.T + tm.SLACK, what="receiver.poll(T) after poll(-1)")
        assert got == published, (f"API-7 violated: poll(T) after a refused poll(-1) returned {got!r}; version "
                                  f"{published} was pending")
    if ends.future is not None:
        waited(ends.future, "API-7", what="wait(T) on the version pending before the refused call")
    try:
        f = bounded(sender.send_async, basic(9), timeout=tm.T, limit=tm.T + tm.SLACK, what="a send after it")
    except HarnessError as e:
        raise TooSlow(f"API-7 violated: {e}") from None
    except ws.WeightSyncError as e:
        raise AssertionError(f"API-7 violated: after {call.name} refused a negative timeout, a send to the receiver "
                             f"raised {type(e).__name__}: {e}; the refused call changes nothing") from None
    if call.mode == "pull":
        got = bounded(receiver.poll, tm.T, limit=tm.T + tm.SLACK, what="receiver.poll(T) after the send")
        assert got == f.version, f"ACK-1 violated: poll(T) after version {f.version} was sent returned {got!r}"
    waited(f, "API-7", what="wait(T) on a send after the refused call")
    assert f.version == published + 1, (
        f"VER-1 violated: the send after the refused call published {f.version}, not {published + 1}")


@pytest.mark.req("API-7", "API-2", "API-3")
@pytest.mark.parametrize("call", [c.param() for c in CALLS])
def test_a_negative_timeout_is_refused_and_changes_nothing(ws, call):
    """Each call with timeout -1 raises ValueError within the grace and does nothing it would have done (API-7.i):
    connect() of either role leaves the pair unconnected (it connects afterwards), a send publishes nothing,
    drop() leaves the receiver live, reading() runs no block, poll() applies nothing; then a send goes through."""
    ends = _ends(ws, call)
    try:
        published = ends.sender.version
        held = UNKNOWN if call.pending and call.mode == "push" else ends.receiver.version
        occurred("API-7.i")
        try:
            got = bounded(call.run, ends, -1, limit=tm.SLACK, what=f"{call.name} with timeout -1")
        except HarnessError:
            raise TooSlow(f"API-7 violated: {call.name} with timeout -1 did not raise within {tm.SLACK:.0f} s; a "
                          "negative timeout raises ValueError") from None
        except ValueError:
            pass
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"API-7 violated: {call.name} with timeout -1 raised {type(e).__name__}: {e}, "
                                 "not ValueError") from None
        else:
            raise AssertionError(f"API-7 violated: {call.name} with timeout -1 returned {got!r}; a negative "
                                 "timeout raises ValueError")
        _still_works(ends, call, published, held)
    finally:
        ends.close()


def _within_grace(call: Call, ends: Ends, what: str):
    """call.run(ends, 0), which must end within the grace: its value, or the error it raised (not raised here)."""
    t0 = time.monotonic()
    try:
        return bounded(call.run, ends, 0, limit=tm.T, what=what), None
    except HarnessError:
        raise TooSlow(f"API-7 violated: {what} waited more than {tm.T:.0f} s: a timeout of 0 is a bound of zero, "
                      "not no bound") from None
    except Exception as e:  # noqa: BLE001
        elapsed = time.monotonic() - t0
        in_time(elapsed <= tm.SLACK, f"API-7 violated: {what} raised {type(e).__name__} only after {elapsed:.1f} s "
                                     "(a timeout of 0 waits for nothing)")
        return None, e


#: The calls that can go on at once with a timeout of 0: each made where nothing holds it back.
FREE = ["sender.send_async(timeout=)", "future.wait(timeout), acked", "sender.drop(i, timeout)",
        "receiver.reading(timeout)", "receiver.poll(timeout)", "sender.connect(timeout)"]


@pytest.mark.req("API-7", "API-9", "SEND-5", "CONS-2")
@pytest.mark.parametrize("call", [c.param() for c in CALLS if c.name in FREE])
def test_a_zero_timeout_goes_on_where_nothing_holds_the_call_back(ws, call):
    """Each call with timeout 0, made where it need not wait, goes on (API-7.j): send_async(timeout=0) with a free
    slot publishes; wait(0) on a version every target acked returns it; drop(0, timeout=0) with no other thread in
    the sender drops; reading(0) on an idle receiver runs its block; poll(0) takes a version that has arrived; and
    connect(0), asked again every 50 ms, returns once the receiver's Ready has arrived (its connect() returned).
    Where the thing it goes on with has not happened yet, a SyncTimeoutError is allowed: those calls are asked
    again until it has."""
    ends = _ends(ws, call)
    try:
        occurred("API-7.j")
        if call.name == "sender.connect(timeout)":
            return _connect_zero(ends, call)
        if call.name == "receiver.poll(timeout)":
            return _poll_zero(ends, call)
        what = f"{call.name} with timeout 0, where nothing holds it back"
        # Asked again while it raises SyncTimeoutError (which changes nothing): the implementation's own thread may
        # hold the sender for a moment; a zero that never goes on keeps raising past SLACK.
        got = _again_until(lambda: call.run(ends, 0), lambda: True, what, ws)
        if call.name == "sender.send_async(timeout=)":
            assert got.version == 1, f"VER-1 violated: send_async(timeout=0) gave a future of version {got.version}"
            waited(got, "SEND-5", what="wait(T) on the send_async(timeout=0)")
        elif call.name == "future.wait(timeout), acked":
            assert got == ends.future.version, f"SEND-5 violated: wait(0) on an acked version returned {got!r}"
        elif call.name == "receiver.reading(timeout)":
            assert got == "entered", f"CONS-2 violated: reading(0) on an idle receiver gave {got!r}"
        elif call.name == "sender.drop(i, timeout)":
            deadline = time.monotonic() + tm.REACTION
            while not ends.receiver.stopped and time.monotonic() < deadline:
                time.sleep(0.01)
            in_time(ends.receiver.stopped, f"API-9 violated: receiver 0 did not stop within {tm.REACTION:.0f} s of "
                                           "drop(0, timeout=0)")
    finally:
        ends.close()


class _NotYet(Exception):
    """What a call gave before what it goes on with has come (poll(0) returning None): asked again."""


def _again_until(fn, until: Callable[[], bool], what: str, ws):
    """fn() every 50 ms while it raises SyncTimeoutError (or _NotYet); once `until()` holds it has SLACK s more to
    return. Returns its value; one that kept timing out is TooSlow (re-checked), any other error a violation."""
    start, since = time.monotonic(), None
    while True:
        try:
            return bounded(fn, limit=tm.T, what=what)
        except HarnessError:
            raise TooSlow(f"API-7 violated: {what} waited more than {tm.T:.0f} s: a timeout of 0 is a bound of zero") from None
        except (ws.SyncTimeoutError, _NotYet) as e:
            now = time.monotonic()
            if since is None and until():
                since = now
            in_time(since is None or now - since <= tm.SLACK,
                    f"API-7 violated: {what} kept raising {type(e).__name__} for {now - (since or now):.1f} s after "
                    f"what it waits for had arrived: {e}")
            in_time(now - start <= tm.T, f"API-7 violated: what {what} waits for did not come within {tm.T:.0f} s")
            time.sleep(0.05)
        except ws.WeightSyncError as e:
            raise AssertionError(f"API-7 violated: {what} raised {type(e).__name__}: {e}; only a SyncTimeoutError "
                                 "may come before what it waits for") from None


def _connect_zero(ends: Ends, call: Call) -> None:
    ws, sender, receiver = ends.ws, ends.sender, ends.receiver
    box: dict = {}

    def connect():
        try:
            box["v"] = receiver.connect(tm.T)
        except BaseException as e:  # noqa: BLE001
            box["e"] = e

    t = threading.Thread(target=connect, daemon=True, name="conformance-zero-connect")
    t.start()
    try:
        _again_until(lambda: sender.connect(0), lambda: "v" in box, "sender.connect(0), the receiver connecting", ws)
    finally:
        t.join(tm.T + tm.SLACK)
    assert box.get("v") == 0, f"INIT-4 violated: receiver.connect(T) beside sender.connect(0) gave {box}"
    ends.connected = True
    waited(sender.send_async(basic(2), timeout=tm.T), "INIT-4", what="a send once connect(0) returned")


def _poll_zero(ends: Ends, call: Call) -> None:
    ws, receiver = ends.ws, ends.receiver
    got = _again_until(lambda: _none_as_not_yet(receiver.poll(0)), lambda: False, "receiver.poll(0)", ws)
    assert got == ends.future.version, f"ACK-1 violated: poll(0) applied {got!r}, not the pending version"
    waited(ends.future, "ACK-1", what="wait(T) on the version poll(0) applied")


def _none_as_not_yet(got):
    """poll(0) returns None when nothing is pending yet: asked again, as a SyncTimeoutError would be."""
    if got is None:
        raise _NotYet("poll(0) returned None")
    return got


#: The calls that must wait with a timeout of 0: each made where what it waits for never comes.
BLOCKED = ["sender.connect(timeout)", "receiver.connect(timeout)"]


@pytest.mark.req("API-7", "INIT-4", "API-3")
@pytest.mark.parametrize("call", [c.param() for c in CALLS if c.name in BLOCKED])
def test_a_zero_timeout_that_must_wait_raises_at_once(ws, call):
    """connect(0) of either role where the other side never answers (the receiver never connects; the sender
    never sends its Init) raises SyncTimeoutError within the grace (API-7.k)."""
    ends = _ends(ws, call)
    try:
        occurred("API-7.k")
        what = f"{call.name} with timeout 0, the other side silent"
        got, error = _within_grace(call, ends, what)
        if error is None:
            raise AssertionError(f"API-7 violated: {what} returned {got!r}; nothing it waits for came")
        if not isinstance(error, ws.SyncTimeoutError):
            raise AssertionError(f"API-7 violated: {what} raised {type(error).__name__}: {error}, not "
                                 "SyncTimeoutError") from None
    finally:
        ends.close()


# ---- None: no bound, whatever an earlier call's timeout was ----------------------------------------------------


def _hold_reads(ends: Ends) -> None:
    """A thread of this process holds a reading() block until `ends.release()`; the receiver's applies wait."""
    entered, go = threading.Event(), threading.Event()

    def reader():
        with ends.receiver.reading(tm.T):
            entered.set()
            go.wait(8 * (tm.T + tm.SLACK))

    t = threading.Thread(target=reader, daemon=True, name="conformance-none-reader")
    t.start()
    ends.threads.append(t)
    ends.release = go.set
    in_time(entered.wait(tm.T), f"CONS-2 violated: reading() on an idle receiver did not enter in {tm.T} s")


def _before_wait(ends: Ends) -> None:
    _hold_reads(ends)
    ends.future = ends.sender.send_async(basic(1), timeout=tm.SHORT)  # it bounds the wait for a slot only


def _before_connect(ends: Ends) -> None:
    try:
        bounded(ends.sender.connect, tm.SHORT, limit=tm.SHORT + tm.SLACK, what="sender.connect(SHORT)")
    except ends.ws.SyncTimeoutError:
        pass
    except HarnessError as e:
        raise TooSlow(f"API-7 violated: {e}") from None
    else:
        raise AssertionError("INIT-5 violated: sender.connect(SHORT) returned, though receiver 0 never answered its "
                             "Init (a connect raises SyncTimeoutError naming those that did not answer)")

    def release():
        ends.joined = Background(lambda: ends.receiver.connect(tm.T), "conformance-none-receiver")
        ends.threads.append(ends.joined._thread)

    ends.release = release


def _before_poll(ends: Ends) -> None:
    got = bounded(ends.receiver.poll, tm.SHORT, limit=tm.SHORT + tm.SLACK, what="receiver.poll(SHORT)")
    assert got is None, f"ACK-1 violated: poll(SHORT) with nothing sent returned {got!r}"

    def release():
        ends.future = ends.sender.send_async(basic(1), timeout=tm.T)

    ends.release = release


#: The calls whose wait None leaves unbounded, each after an earlier call of the same objects gave a short timeout:
#: (what the earlier call was, how it is made and what the call then waits for is held back, what the call gives).
UNBOUNDED = {
    "future.wait(timeout)": ("send_async(timeout=SHORT), whose timeout bounds its wait for a slot only", _before_wait, 1),
    "sender.connect(timeout)": ("a connect(SHORT) that timed out", _before_connect, None),
    "receiver.poll(timeout)": ("a poll(SHORT) that returned None", _before_poll, 1),
}


@pytest.mark.req("API-7", "API-2", "API-3")
@pytest.mark.parametrize("call", [c.param() for c in CALLS if c.name in UNBOUNDED])
def test_no_timeout_waits_past_every_earlier_calls_timeout(ws, call):
    """With timeout None a call waits without bound, whatever timeout an earlier call on the same objects gave
    (API-7.l): `future.wait(None)` on a `send_async(timeout=SHORT)` whose target is held back by a reading()
    block; `sender.connect(None)` after a connect(SHORT) that timed out; `poll(None)` after a poll(SHORT) that
    found nothing. Each is still waiting 3 x SHORT later, and returns once what it waits for comes."""
    earlier, before, want = UNBOUNDED[call.name]
    ends = _ends(ws, call, pending=False)
    try:
        before(ends)
        occurred("API-7.l")
        waiting = Background(lambda: call.run(ends, None), "conformance-none-call")
        ends.threads.append(waiting._thread)
        time.sleep(3 * tm.SHORT)
        if call.name == "future.wait(timeout)" and ends.receiver.version != 0:
            raise AssertionError(f"CONS-2 violated: the receiver applied version {ends.receiver.version} while a "
                                 "reading() block of its was still open: its apply did not wait for the block")
        if waiting.outcome is not None:
            status, got = waiting.outcome
            if call.name == "future.wait(timeout)" and status == "ok":
                raise AssertionError(f"CONS-2 violated: version {got!r} was acked while a reading() block of its "
                                     "receiver was still open: its apply did not wait for the block")
            raise AssertionError(
                f"API-7 violated: {call.name} with timeout None, after {earlier}, ended within {3 * tm.SHORT:.1f} s "
                f"with {got!r} ({'returned' if status == 'ok' else 'raised'}) before what it waits for came; None "
                "waits without bound, and an earlier call's timeout bounds only that call")
        assert ends.release is not None, "each row's setup says what lets the call go on"
        ends.release()
        outcome = waiting.join(tm.T + tm.SLACK)
        in_time(outcome is not None, f"API-7 violated: {call.name} with timeout None did not return within "
                                     f"{tm.T + tm.SLACK:.0f} s of what it waits for")
        status, got = outcome
        if status == "err":
            raise AssertionError(f"API-7 violated: {call.name} with timeout None, after {earlier}, raised "
                                 f"{type(got).__name__}: {got}") from None
        assert got == want, f"API-7 violated: {call.name} with timeout None gave {got!r}, not {want!r}"
        if ends.future is not None:
            waited(ends.future, "API-7", what="wait(T) on the version the call waited for")
        if ends.joined is not None:
            joined = ends.joined.join(tm.T + tm.SLACK)
            assert joined == ("ok", 0), f"INIT-4 violated: receiver.connect(T) beside sender.connect(None) gave {joined}"
    finally:
        if ends.release is not None and call.name == "future.wait(timeout)":
            ends.release()  # the reader leaves
        ends.close()
