"""Spec sections 1-4, 12 and 13 on the wire: a scripted receiver against the implementation's Sender.

The scripted receiver (peers.ScriptedReceiver) takes over one receiver's channel
through `handle.fileno()` and speaks the wire profile by hand, as a correct,
buggy or hostile worker would. Real receivers in worker processes sit beside it:
whatever the scripted one does, the trainer must stay up, name it within the
call's timeout, and keep serving the others with their bytes unchanged (SEC-5).
"""

from __future__ import annotations

import ctypes
import faulthandler
import marshal
import mmap
import os
import re
import sys
import threading
import time
from types import SimpleNamespace

import msgpack
import pytest
import torch

from . import strategies as S
from . import timing as tm
from .bounds import HarnessError, bounded
from .clauses import occurred
from .model import describe
from .names import SPEC_DIR
from .peers import (
    FIELDS,
    HEARTBEAT,
    LENGTH,
    MAX_TO_RECEIVER,
    MAX_TO_SENDER,
    Joiner,
    PeerClosed,
    ScriptedReceiver,
    ack,
    canonical,
    check_sealed,
    code_payload,
    frame,
    loose,
    pack,
    padded,
    ready,
    with_odd_fields,
    with_repeated_key,
    without_optional,
)
from .rig import Background, check_receiver_error, expect_error, waited
from .verdict import TooSlow, checked_nothing, in_time
from .wire_schema import negative, negatives

#: Every test here reads or writes the channel's bytes through `handle.fileno()`.
pytestmark = pytest.mark.needs("wire")

#: Requirements no test can check through the binding and the wire, with the reason.
NOT_OBSERVABLE: dict[str, str] = {}  # each of the four of protocol 1.0 now has a scripted-peer test
GOOD = 2  # real receivers beside the scripted one


def basic(seed=0):
    return S.distinct_weights(S.BASIC_SPEC, seed)


def scripted(rigs, good: int = GOOD, weights=None, n=None):
    """A rig whose receivers 0..good-1 are real and connected, and whose last one is scripted here."""
    n = good + 1 if n is None else n
    rig = rigs(basic(0) if weights is None else weights, n, connect=list(range(good)))
    k = n - 1
    rig.scripted = join_scripted(rig, k)
    return rig, rig.scripted, k


def join_scripted(rig, k: int) -> ScriptedReceiver:
    """Receiver k of `rig` played here: the sender's connect(workers=[k]) runs while it answers Init with Ready."""
    peer = ScriptedReceiver(rig.sender.handle(k), k)
    connect_beside(rig, k, lambda: handshake(peer), "INIT-4", "a correct scripted peer")
    return peer


def handshake(peer, answer: bool = True) -> dict:
    """The scripted receiver's side of the handshake; no Init in time is a matter of time."""
    try:
        return peer.handshake(answer=answer)
    except HarnessError as e:
        raise TooSlow(f"INIT-1 violated: no Init reached the scripted receiver: {e}") from None


def connect_beside(rig, k: int, play, rule: str, what: str):
    """The sender's connect(workers=[k]) in a thread while `play()` plays receiver k's side here; the connect
    must complete (a timeout is a matter of time, any other error a violation of `rule`). Returns what play gave."""
    out = {}

    def connect():
        try:
            rig.sender.connect(tm.T, workers=[k])
        except Exception as e:  # noqa: BLE001 - reported below
            out["error"] = e

    t = threading.Thread(target=connect, daemon=True)
    t.start()
    played = play()
    t.join(tm.T + tm.SLACK)
    in_time(not t.is_alive() and not isinstance(out.get("error"), rig.ws.SyncTimeoutError),
            f"{rule} violated: connect of {what} did not complete: {out.get('error')}")
    assert "error" not in out, f"{rule} violated: connect of {what} raised {type(out['error']).__name__}: {out['error']}"
    return played


def next_receive(peer, ids: str) -> dict:
    """The next Receive the scripted receiver gets; none in time is a matter of time."""
    try:
        return peer.next_receive()
    except HarnessError as e:
        raise TooSlow(f"{ids} violated: no Receive reached the scripted receiver: {e}") from None


def _violated_error(ws, rig, f, k, rule):
    """The wait on a send to the scripted receiver fails with ReceiverError naming only it, as a violation."""
    e = expect_error(ws, "ReceiverError", f.wait, tm.T, ids=f"{rule}, SM-S-9, SEC-1", what="wait()",
                     limit=tm.REACTION + tm.SLACK, naming=[k])
    assert getattr(e, "causes", {}).get(k) == "violation", (
        f"SEND-7 violated: the error's causes are {getattr(e, 'causes', None)}; receiver {k} broke the protocol"
    )
    return e


#: MSG-3: the file a payload of "a pickle that would create a file" creates if the sender runs it.
CODE_MARK = os.path.join("/tmp", f"conformance-msg3-sender-{os.getpid()}")

ATTACKS = {
    # name: (what the scripted receiver writes, given the pending version v and its id k; the rule it breaks)
    "payload is not MessagePack": (lambda v, k: frame(b"\xc1garbage"), "WIRE-3"),
    "a marshal'd tuple (a 1.0 reference peer)": (lambda v, k: frame(marshal.dumps(("Ack", k, v, "ok", ""))), "WIRE-3"),
    "length prefix of 4 GiB": (lambda v, k: b"\xff\xff\xff\xff" + b"x" * 16, "WIRE-2"),
    # Legal towards a receiver, one byte too long towards the sender: each direction has its own bound.
    "length prefix of 64 KiB + 1": (lambda v, k: LENGTH.pack(MAX_TO_SENDER + 1) + b"x" * 16, "WIRE-2"),
    "an HTTP request": (lambda v, k: b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "WIRE-2"),
    "zero-length frame": (lambda v, k: b"\x00\x00\x00\x00", "WIRE-1"),
    "unknown message type": (lambda v, k: frame(pack({"type": "Hello", "receiver": k})), "MSG-3"),
    "a message of the other direction": (lambda v, k: frame(pack({"type": "Stop"})), "MSG-3"),
    "version as a string": (lambda v, k: frame(pack(ack(k, str(v)))), "WIRE-3"),
    "version as a list": (lambda v, k: frame(pack(ack(k, [v]))), "WIRE-3"),
    "version as a float": (lambda v, k: frame(pack(ack(k, float(v)))), "WIRE-3"),
    "version as a boolean": (lambda v, k: frame(pack(ack(k, True))), "WIRE-3"),
    "missing field": (lambda v, k: frame(pack({"type": "Ack", "receiver": k, "version": v})), "WIRE-3"),
    "detail over 4096 bytes": (lambda v, k: frame(pack(ack(k, v, "error", "x" * 5000))), "WIRE-3"),
    "forged receiver id": (lambda v, k: frame(pack(ack(0, v))), "MSG-2"),
    "ack of a version not pending": (lambda v, k: frame(pack(ack(k, v + 5))), "ACK-5"),
    "unknown status": (lambda v, k: frame(pack(ack(k, v, "maybe"))), "MSG-1"),
    "Ready while live": (lambda v, k: frame(pack(ready(k, v))), "SM-S-9"),
    "a map nested 100000 deep": (lambda v, k: frame(b"\x81\xa1a" * 20000 + b"\xc0"), "WIRE-3"),
    "an array header announcing 2**31 items": (lambda v, k: frame(b"\xdd\x80\x00\x00\x00"), "WIRE-3"),
    "a pickle that would create a file": (lambda v, k: frame(code_payload(CODE_MARK)), "MSG-3"),
}


@pytest.mark.req("SEC-1", "SEC-5", "SM-S-9", "MSG-1", "MSG-2", "MSG-3", "ACK-5", "WIRE-1", "WIRE-2", "WIRE-3", "SEND-7")
@pytest.mark.needs("push")
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_receiver_that_breaks_the_wire_is_cut_off_alone(ws, rigs, closing, attack):
    rig, peer, k = scripted(rigs)
    closing(peer)
    write, rule = ATTACKS[attack]
    f = rig.send_async(basic(1))
    v = next_receive(peer, "SEND-1")["version"]
    t0 = time.monotonic()
    peer.send_raw(write(v, k))
    try:
        _violated_error(ws, rig, f, k, rule)
    finally:
        if os.path.exists(CODE_MARK):
            os.remove(CODE_MARK)
            raise AssertionError(f"MSG-3 violated: decoding {attack!r} from receiver {k} ran its code (it created "
                                 f"{CODE_MARK})")
    if rule == "WIRE-2":  # judged on the 4 length bytes, not after waiting for the payload (WIRE-7's bound)
        in_time(time.monotonic() - t0 < min(tm.REACTION / 2, tm.FRAME_BOUND - 1),
                f"WIRE-2 violated: {attack!r} was named after {time.monotonic() - t0:.1f} s, not once its length was read")
    in_time(peer.closed_by_peer(tm.SLACK), f"SM-S-9 violated: after {attack!r} the sender kept receiver {k}'s channel open")
    for step in range(2, 4):  # SEC-5: the others are served as before
        rig.send(basic(step), workers=list(range(GOOD)))
        rig.check()
    expect_error(ws, "ReceiverError", rig.sender.send, workers=[k], timeout=tm.T, ids="SM-S-9, SEND-4",
                 what=f"a send to receiver {k} after it broke the protocol", naming=[k])


# ---- negatives generated from the schema (WIRE-3): every field missing, of another type, over its bound ----

#: The legal frames a receiver sends, each the base of its negatives: Ready in place of the Ready to an Init of
#: version 0, Ack and Heartbeat (which has no fields) with the Receive of version 1 pending. Receiver 0, so that
#: a decoder filling in a missing id with 0 finds the id right. Each case is made again from the version the
#: sender's own frames call for (wire_schema.negative).
ANSWERS = [("Ready", ready(0, 0)), ("pending", ack(0, 1)), ("pending", HEARTBEAT)]
#: A legal Join of receiver 0, whose negatives are listed; each is made at run time from the joiner's own Join.
JOIN = {"type": "Join", "receiver": 0, "nonce": bytes(32), "proof": bytes(32)}


def schema_cases(bases) -> list:
    """One pytest param (step, base, case) per negative of each legal message of `bases`, named by it."""
    return [pytest.param(step, base, name, id=name) for step, base in bases for name, _, _ in negatives(base)]


@pytest.mark.req("WIRE-3", "SM-S-9", "SEC-1")
@pytest.mark.needs("push")
@pytest.mark.parametrize("step,base,case", schema_cases(ANSWERS))
def test_an_answer_that_breaks_the_schema_is_a_violation(ws, rigs, closing, step, base, case):
    """Each negative of Ready (answering the Init) and of Ack and Heartbeat (a Receive pending), made from Table
    12-1 by wire_schema.negatives: the call waiting on that receiver fails with ReceiverError naming it, and its
    channel is closed (WIRE-3, SM-S-9). One sender per case, no other receiver: the hand-picked attacks above
    check that the others are served meanwhile (SEC-5)."""
    k = 0
    rig = rigs(basic(0), 1, connect=False)
    peer = ScriptedReceiver(rig.sender.handle(k), k)
    closing(peer)
    if step == "Ready":
        def play():
            init = handshake(peer, answer=False)
            payload, clause = negative(ready(k, init["version"]), case)
            peer.send(payload)
            occurred(clause)

        t = threading.Thread(target=play, daemon=True)
        t.start()
        e = expect_error(ws, "ReceiverError", rig.sender.connect, tm.T, workers=[k], ids="WIRE-3, SM-S-9", naming=[k],
                         what=f"connect() of a receiver that answered Init with {case}")
        t.join(tm.T)
        assert getattr(e, "causes", {}).get(k) in (None, "violation"), (
            f"SEND-7 violated: receiver {k} answered {case}; the error's causes are {e.causes}")
    else:
        connect_beside(rig, k, lambda: handshake(peer), "INIT-4", "a correct scripted peer")
        f = rig.send_async(basic(1))
        v = next_receive(peer, "SEND-1")["version"]
        payload, clause = negative({**base, "version": v} if "version" in base else base, case)
        peer.send(payload)
        occurred(clause)
        _violated_error(ws, rig, f, k, "WIRE-3")
    in_time(peer.closed_by_peer(tm.REACTION), f"SM-S-9 violated: after {case} the sender kept receiver {k}'s channel open")


@pytest.mark.req("WIRE-3", "RDV-3")
@pytest.mark.needs("rendezvous")
@pytest.mark.parametrize("case", [pytest.param(name, id=name) for name, _, _ in negatives(JOIN)])
def test_a_join_that_breaks_the_schema_is_a_violation(ws, rigs, closing, case):
    """Each negative of Join, made from Table 12-1 by wire_schema.negatives and sent by a joiner that holds the
    URL's secret: the sender answers no Welcome (a Refuse may come) and closes the connection (RDV-3: anything
    else on a joining connection is a violation; WIRE-3)."""
    rig = rigs(basic(0), 1, connect=False, listen=True)
    joiner = Joiner(rig.sender.url(0))
    closing(joiner)
    payload, clause = negative(joiner.join_message(), case)
    joiner.send(payload)
    occurred(clause)
    bound = tm.REACTION + tm.SLACK
    try:
        msg = joiner.answer_before_close(bound, ignore=("Refuse",))
    except HarnessError:
        raise TooSlow(f"RDV-3 violated: the sender kept a joining connection open {bound:.0f} s after {case}") from None
    assert msg is None, (f"WIRE-3 violated: the sender answered {case} with {msg.get('type')}; the frame is a "
                         "violation (RDV-3), after which it closes the connection")


@pytest.mark.waits(10)
@pytest.mark.req("SEC-2", "WIRE-7", "SEND-2")
@pytest.mark.needs("push")
def test_a_frame_cut_short_holds_up_nobody(ws, rigs, closing):
    """One length prefix and part of a frame, then a byte a second, never the last: nothing waits on it
    but its own sends, and the frame's ten seconds run from its first byte, not from the latest."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    f = rig.send_async(basic(1))
    v = next_receive(peer, "SEND-1")["version"]
    whole = frame(pack(ack(k, v)))
    t_cut = time.monotonic()
    peer.send_raw(whole[: len(whole) // 2])
    stop = threading.Event()
    left = len(whole) - 1 - len(whole) // 2
    # A byte well within every 10 s (WIRE-7's own bound, whatever the timescale), for as long as the wait below runs.
    every = min(tm.FRAME_BOUND / 4, (2 * tm.REACTION + tm.SLACK) / left)

    def trickle():
        for i in range(len(whole) // 2, len(whole) - 1):
            if stop.wait(every):
                return
            try:
                peer.send_raw(whole[i : i + 1])
            except OSError:  # the sender cut it off
                return

    threading.Thread(target=trickle, daemon=True, name="conformance-trickle").start()
    closing(SimpleNamespace(close=stop.set))
    expect_error(ws, "SyncTimeoutError", f.wait, tm.TIMED, ids="SEC-2, SEND-2", what="wait() on the silent receiver",
                 limit=tm.TIMED + tm.SLACK)
    rig.send(basic(2), workers=list(range(GOOD)), timeout=tm.T)  # not held up by the half frame
    rig.check()
    g = rig.send_async(basic(3), workers=[k])
    # WIRE-7: ten seconds after the frame started it is a violation, whatever the wait's timeout.
    limit = tm.REACTION - (time.monotonic() - t_cut) + tm.REACTION + tm.SLACK
    e = expect_error(ws, "ReceiverError", g.wait, None, ids="WIRE-7", what="wait(None) on the stalled receiver",
                     limit=limit, naming=[k])
    assert getattr(e, "causes", {}).get(k) == "violation", f"WIRE-7 violated: causes {getattr(e, 'causes', None)}"
    try:
        bounded(rig.sender.close, limit=tm.REACTION + tm.SLACK, what="close()")
    except HarnessError as e:
        raise TooSlow(f"LIFE-4 violated: close() with a receiver stalled mid-frame: {e}") from None


@pytest.mark.waits(5)
@pytest.mark.req("SEC-3", "SEC-5", "VER-2", "LIFE-4")
@pytest.mark.needs("push")
def test_a_receiver_that_never_reads_is_named_not_waited_for(ws, rigs, closing):
    """It acks every version without reading its channel: the sender must not block writing to it, nor in
    close(), which leaves that full channel without Stop and ends it (LIFE-4)."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    for count in range(200_000):
        before = rig.sender.version
        t0 = time.monotonic()
        try:
            f = bounded(rig.sender.send_async, workers=[k], timeout=tm.TIMED, limit=tm.TIMED + tm.SLACK, what="send_async")
        except HarnessError as e:
            raise TooSlow(f"SEC-3 violated: send #{count} to a receiver that does not read: {e}") from None
        except ws.SyncTimeoutError as e:
            assert k in e.workers, f"SEC-3 violated: the SyncTimeoutError names {e.workers}, not receiver {k}"
            assert rig.sender.version == before and e.version is None, (
                f"VER-2 violated: the refused send moved the version to {rig.sender.version}"
            )
            in_time(time.monotonic() - t0 <= tm.TIMED + tm.SLACK,
                    f"SEC-3 violated: send_async({tm.TIMED}) ended after {time.monotonic() - t0:.1f} s")
            break
        rig.model.publish(rig.model.published[rig.model.version], [k])
        peer.send(ack(k, f.version))  # answered without reading a byte
    else:
        raise AssertionError("SEC-3 violated: 200000 unread Receives and no send waited for the receiver")
    rig.send(basic(1), workers=list(range(GOOD)), timeout=tm.T)  # SEC-5
    rig.check()
    try:
        bounded(rig.sender.close, limit=tm.REACTION + tm.SLACK, what=f"close() with receiver {k}'s channel full")
    except HarnessError as e:
        raise TooSlow(f"LIFE-4, SEC-3 violated: {e}") from None
    in_time(peer.closed_by_peer(tm.REACTION), f"LIFE-4 violated: receiver {k}'s channel, full when close() ran, "
                                              f"had not ended {tm.REACTION:.0f} s later")


@pytest.mark.waits(5)
@pytest.mark.req("WIRE-1", "WIRE-2", "WIRE-3", "WIRE-4", "SEC-3")
@pytest.mark.needs("push")
def test_frames_queued_for_a_slow_reader_arrive_whole_and_in_order(ws, rigs, closing):
    """A receiver that reads in bursts while versions keep coming (acking each without waiting to
    read it): what the sender had to queue for it (SEC-3 lets it hold up to 1 MiB) must reach it as
    whole frames in the order written, one Receive per version, versions ascending (WIRE-1).
    Fast paths that write a new frame while older bytes still wait in the queue break exactly this."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    sent: list[int] = []
    got: list[int] = []
    problem: list[BaseException] = []
    done = threading.Event()

    def read():
        try:
            quiet_since = time.monotonic()
            while not done.is_set():
                try:
                    msg, fds = peer.recv(0.1)
                except HarnessError:
                    if time.monotonic() - quiet_since > tm.T:
                        raise
                    continue
                quiet_since = time.monotonic()
                assert msg.get("type") == "Receive", f"WIRE-1 violated: a {msg.get('type')} among the Receives"
                peer.take_slots(msg["new_slots"], fds)
                v = msg["version"]
                assert not got or v > got[-1], f"WIRE-1 violated: Receive of version {v} came after {got[-1]}"
                got.append(v)
                if len(got) % 2000 == 0:
                    time.sleep(0.3)  # lets the sender's queue fill, then drains it a little at a time
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            problem.append(e)

    def publish() -> bool:
        """One version to receiver k, acked without reading it; False when the send found its queue full."""
        before = rig.sender.version
        try:
            f = bounded(rig.sender.send_async, workers=[k], timeout=tm.TIMED, limit=tm.TIMED + tm.SLACK,
                        what="send_async")
        except HarnessError as e:
            raise TooSlow(f"SEC-3 violated: a send to a receiver that reads slowly: {e}") from None
        except ws.SyncTimeoutError:  # its queue is over SEC-3's bound: legal; let it read
            assert rig.sender.version == before, "VER-2 violated: the refused send moved the version"
            return False
        rig.model.publish(rig.model.published[rig.model.version], [k])
        sent.append(f.version)
        peer.send(ack(k, f.version))
        return True

    peer.chunk = 256
    reader = threading.Thread(target=read, daemon=True, name="conformance-slow-reader")
    reader.start()
    end = time.monotonic() + 2
    try:
        while time.monotonic() < end and not problem:
            if not publish():
                time.sleep(0.01)
        # Then a version every 50 ms until the reader has caught up: each send writes to its channel, so
        # whatever was queued must go first (how an implementation moves queued bytes while its caller
        # makes no call is not what this checks).
        until = time.monotonic() + tm.T + tm.SLACK
        while sent and not (got and got[-1] >= sent[-1]) and not problem and time.monotonic() < until:
            publish()
            reader.join(0.05)
    finally:
        done.set()
    reader.join(tm.T + tm.SLACK)
    if problem:
        e = problem[0]
        if isinstance(e, HarnessError):
            raise AssertionError(f"WIRE-1 violated: the slow reader got versions up to {got[-1] if got else None} "
                                 f"of {sent[-1] if sent else None}, then no whole frame: {e}") from None
        raise e
    in_time(bool(got) and got[-1] >= sent[-1],
            f"SEC-3 violated: the slow reader got up to version {got[-1] if got else None} of {sent[-1]} "
            f"within {tm.T} s of sending more")
    assert got == sent, f"WIRE-1 violated: the reader got {len(got)} Receives for {len(sent)} versions sent"
    rig.send(basic(1), workers=list(range(GOOD)), timeout=tm.T)
    rig.check()


@pytest.mark.req("SEC-3", "SLOT-3", "VER-2", "ACK-2", "SEND-5")
@pytest.mark.needs("pull")
def test_a_pull_receiver_that_never_polls_holds_up_no_send_however_many_slots(ws):
    """With room for 1000 slots, every version to a pull receiver that never polls brings a new slot.

    Its channel fills with Receives and their handles; each send_async(timeout) must still
    return or raise SyncTimeoutError naming that receiver within its timeout.
    """
    sender = ws.Sender(basic(0), 1, max_slots=1000)
    receiver = ws.Receiver(sender.handle(0), mode="pull")
    t = threading.Thread(target=lambda: receiver.connect(tm.T), daemon=True)
    t.start()
    try:
        sender.connect(tm.T)
        t.join(tm.T + tm.SLACK)
        futures = []
        for count in range(400):
            before = sender.version
            t0 = time.monotonic()
            try:
                futures.append(bounded(sender.send_async, basic(count + 1), timeout=tm.TIMED, limit=tm.TIMED + tm.SLACK,
                                       what=f"send_async #{count} to a pull receiver that never polls"))
            except HarnessError as e:
                raise TooSlow(f"SEC-3 violated: {e}") from None
            except ws.SyncTimeoutError as e:
                assert e.workers == [0], f"SLOT-3, SEC-3 violated: the SyncTimeoutError names {e.workers}, not [0]"
                assert sender.version == before, f"VER-2 violated: a refused send moved the version to {sender.version}"
                in_time(time.monotonic() - t0 <= tm.TIMED + tm.SLACK,
                        f"SEC-3 violated: send_async({tm.TIMED}) ended after {time.monotonic() - t0:.1f} s")
                break
        # The receiver is still served: while the trainer waits, polls climb to the newest version
        # (each takes the newest that has reached it, ACK-2) and every future is settled.
        newest, last, seen = sender.version, 0, []
        waiter = threading.Thread(target=lambda: seen.append(_outcome(futures[-1].wait, tm.T + tm.SLACK)), daemon=True)
        waiter.start()
        deadline = time.monotonic() + tm.T
        while last != newest and time.monotonic() < deadline:
            try:
                v = bounded(receiver.poll, 0.1, limit=0.1 + tm.SLACK, what="poll")
            except HarnessError as e:
                raise TooSlow(f"API-3 violated: {e}") from None
            if v is not None:
                assert last < v <= newest, f"ACK-2 violated: poll() returned {v} after {last} (newest {newest})"
                last = v
        in_time(last == newest, f"ACK-2 violated: polls reached version {last} of {newest} within {tm.T} s")
        waiter.join(tm.T + 2 * tm.SLACK)
        in_time(bool(seen) and not isinstance(seen[0][1], TimeoutError),
                f"SEND-5 violated: the last future's wait() gave {seen or 'nothing'} in time")
        assert seen == [("ok", newest)], f"SEND-5 violated: the last future's wait() gave {seen}"
        for f in futures:
            waited(f, "SEND-5")
    finally:
        receiver.close()
        sender.close()


@pytest.mark.req("ACK-2", "WIRE-4")
@pytest.mark.needs("pull", "zero_copy")
def test_frames_behind_a_frame_with_handles_count_for_the_next_poll(ws):
    """A zero-copy pull receiver keeps its slots, so versions 2 and 3 each bring a new slot's handle.

    On a Unix stream socket a read ends where a message with handles ends: the Receive of
    version 3 waits behind that of version 2, and poll() must still apply 3.
    """
    sender = ws.Sender(basic(0), 1, max_slots=8)
    receiver = ws.Receiver(sender.handle(0), mode="pull", zero_copy=True)
    t = threading.Thread(target=lambda: receiver.connect(tm.T), daemon=True)
    t.start()
    try:
        sender.connect(tm.T)
        t.join(tm.T + tm.SLACK)
        expect_error(ws, "SyncTimeoutError", sender.send, basic(1), timeout=tm.TIMED, ids="SEND-5",
                     what="a send to a pull receiver that has not polled", limit=tm.TIMED + tm.SLACK)
        futures = [sender.send_async(basic(2), workers=[0], timeout=tm.T), sender.send_async(basic(3), timeout=tm.T)]
        time.sleep(0.05)
        try:
            v = bounded(receiver.poll, tm.T, limit=tm.T + tm.SLACK, what="poll")
        except HarnessError as e:
            raise TooSlow(f"API-3 violated: {e}") from None
        assert v == 3, f"ACK-2 violated: poll() applied {v}; versions 1 to 3 were pending"
        for f in futures:
            waited(f, "SEND-5")
    finally:
        receiver.close()
        sender.close()


@pytest.mark.req("SEC-4", "WIRE-4", "SLOT-4")
@pytest.mark.needs("push")
def test_slot_handles_are_read_only_and_sealed(ws, rigs, closing):
    """A receiver cannot resize or rewrite a slot through any descriptor it holds or can open."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    assert peer.slot_fds, "WIRE-4 violated: the Init of a CPU sender carried no slot handle"
    check_sealed(peer.slot_fds)
    for step in range(1, 4):
        rig.send(basic(step), workers=list(range(GOOD)), timeout=tm.T)
        rig.check()


@pytest.mark.req("WIRE-4")
@pytest.mark.needs("push")
def test_descriptors_a_receiver_passes_are_not_taken(ws, rigs, closing):
    """The sender reads without a control buffer: the kernel drops what a receiver passes."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    r, w = os.pipe()
    try:
        inode = os.fstat(r).st_ino
        f = rig.send_async(basic(1), workers=[k])
        next_receive(peer, "SEND-1")
        peer.send(ack(k, f.version), fds=[r, w, r])
        waited(f, "SEND-5")
        mine = [fd for fd in os.listdir("/proc/self/fd") if _link(fd) == f"pipe:[{inode}]"]
        assert len(mine) == 2, f"WIRE-4 violated: the sender process took descriptors from a receiver: {mine}"
    finally:
        os.close(r)
        os.close(w)


def _link(fd: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


@pytest.mark.req("WIRE-5", "WIRE-6", "WIRE-1", "INIT-1")
@pytest.mark.needs("push")
def test_every_frame_the_sender_writes_is_canonical(ws, rigs, closing):
    rig, peer, k = scripted(rigs)
    closing(peer)
    for step in range(1, 4):
        f = rig.send_async(basic(step))
        m = next_receive(peer, "SEND-1")
        peer.send(ack(k, m["version"]))
        waited(f, "SEND-1")
    init = peer.init
    assert init["protocol"].split(".")[0] == "1", f"WIRE-6 violated: Init speaks protocol {init['protocol']!r}"
    assert isinstance(init.get("capabilities"), list), "WIRE-6 violated: Init carries no capabilities list"
    assert init["byteorder"] == sys.byteorder, f"WIRE-8 violated: Init says {init['byteorder']!r} on a {sys.byteorder}-endian host"
    for payload in peer.frames_in:
        assert payload == canonical(payload), (
            f"WIRE-5 violated: a {msgpack.unpackb(payload)['type']} frame is not in canonical form: {payload[:60].hex()}"
        )


@pytest.mark.req("WIRE-8", "LAYOUT-1", "CONS-4")
@pytest.mark.needs("push")
def test_slot_bytes_are_the_arrays_in_c_order(ws, rigs, closing):
    """Each array sits at its Entry's offset, element by element as the host stores it (Table 12-2)."""
    weights = S.distinct_weights(S.ALL_DTYPES_SPEC, 3)
    rig, peer, k = scripted(rigs, weights=weights)
    closing(peer)

    def check(slot: int, version_weights):
        size = os.fstat(peer.slot_fds[slot]).st_size
        with mmap.mmap(peer.slot_fds[slot], size, prot=mmap.PROT_READ) as m:
            for e in peer.init["manifest"]:
                assert e["offset"] % 64 == 0, f"LAYOUT-1 violated: {e['name']} at offset {e['offset']}"
                want = S.raw_bytes(version_weights[e["name"]])
                got = bytes(m[e["offset"]: e["offset"] + e["nbytes"]])
                assert e["nbytes"] == len(want) and got == want, (
                    f"WIRE-8 violated: {e['name']} ({e['dtype']}{e['shape']}) in slot {slot}: "
                    f"{got[:16].hex()} instead of {want[:16].hex()}"
                )

    check(peer.init["slot"], weights)
    new = S.distinct_weights(S.ALL_DTYPES_SPEC, 4)
    f = rig.send_async(new, workers=[k])
    m = next_receive(peer, "SEND-1")
    check(m["slot"], new)
    peer.send(ack(k, m["version"]))
    waited(f, "SEND-1")


VECTOR = re.compile(r"^#### (?P<name>.+?)\n\nPayload as JSON: `(?P<json>[^`]+)`\n\nFrame, \d+ bytes:\n\n"
                    r"```text\n(?P<hex>[0-9a-f \n]+?)```", re.M)


def spec_vector(name: str) -> bytes:
    text = (SPEC_DIR / "12-wire.md").read_text()
    for m in VECTOR.finditer(text):
        if m["name"] == name:
            return bytes.fromhex(m["hex"].replace(" ", "").replace("\n", ""))
    raise AssertionError(f"spec/12-wire.md has no test vector {name!r}")


@pytest.mark.req("WIRE-9", "WIRE-5", "SM-S-3", "MSG-1")
@pytest.mark.needs("push")
def test_the_spec_vectors_are_understood(ws, rigs, closing):
    """The scripted receiver answers with the spec's exact Ready and Ack frames (receiver 2, versions 7 and 9).
    Versions 1 to 7 went out while receiver 2 was unconnected: its channel carries none of them (SM-S-3), only
    its Init, then Receives 8 and 9 with their fields (MSG-1)."""
    rig = rigs(basic(0), 3, connect=[0])
    for step in range(1, 8):
        rig.send(basic(step), workers=[0])
    peer = ScriptedReceiver(rig.sender.handle(2), 2)
    closing(peer)
    out = {}
    t = threading.Thread(target=lambda: out.update(r=_attempt(lambda: rig.sender.connect(tm.T, workers=[2]))), daemon=True)
    t.start()
    try:
        init, fds = peer.recv_past_heartbeats(tm.BOUND)
    except HarnessError as e:
        raise TooSlow(f"INIT-1 violated: no Init reached receiver 2: {e}") from None
    assert init.get("type") == "Init", (f"SM-S-3 violated: the first frame to receiver 2, unconnected while versions "
                                        f"1 to 7 went out, is {init!r:.200}, not its Init")
    peer.take_slots(init["slots"], fds)
    assert init["version"] == 7, f"LIFE-1 violated: the Init carries version {init['version']}, not 7"
    peer.send_raw(spec_vector("Ready"))
    t.join(tm.T + tm.SLACK)
    in_time("r" in out and not isinstance(out["r"], TimeoutError), f"WIRE-9 violated: connect with the spec's "
                                                                   f"Ready frame did not complete: {out.get('r')}")
    assert out.get("r") is None, f"WIRE-9 violated: the spec's Ready frame was refused: {out.get('r')}"
    f8 = rig.send_async(basic(8), workers=[2])
    f9 = rig.send_async(basic(9), workers=[2])
    got = []
    for _ in (8, 9):
        try:
            msg, fds = peer.recv_past_heartbeats(tm.BOUND)
        except HarnessError as e:
            raise TooSlow(f"SEND-1 violated: no Receive reached the scripted receiver: {e}") from None
        assert msg.get("type") == "Receive", f"SM-S-3, VER-3 violated: receiver 2 got {msg!r:.200}, not Receive 8 and 9"
        missing = [f for f in FIELDS["Receive"] if f not in msg]
        assert not missing, f"MSG-1 violated: a Receive lacks {missing}: {msg!r:.200}"
        peer.take_slots(msg["new_slots"], fds)
        got.append(msg["version"])
    assert got == [8, 9], (f"SM-S-3, VER-3 violated: the scripted receiver got Receives {got}, not [8, 9] (versions "
                           "1 to 7 went out before it was live)")
    peer.send_raw(spec_vector("Ack"))  # Ack(2, 9, ok) answers 8 and 9 (ACK-2)
    waited(f8, "WIRE-9")
    waited(f9, "WIRE-9")


@pytest.mark.req("ACK-2", "ACK-6", "SEND-7")
def test_an_error_ack_of_the_newest_fails_every_older_send_pending_there(ws, rigs, closing):
    """Three versions pending at the scripted receiver alone; it answers only the newest, with Ack(error). That Ack
    answers the older two as well (ACK-2): each of the three sends fails naming the receiver with cause "error"
    (ACK-6), none waits out its timeout once the Ack was read."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    futures = [rig.send_async(basic(seed), workers=[k]) for seed in (1, 2, 3)]
    got = [next_receive(peer, "SEND-1")["version"] for _ in futures]
    assert got == [f.version for f in futures], f"VER-3 violated: Receives {got} for sends of {[f.version for f in futures]}"
    peer.send(ack(k, got[-1], "error", "the scripted receiver's apply failed"))
    newest = expect_error(ws, "ReceiverError", futures[-1].wait, tm.T, ids="ACK-6", what=f"wait() on version {got[-1]}",
                          naming=[k])
    assert newest.causes.get(k) == "error", f"ACK-6 violated: the Ack(error) gave cause {newest.causes.get(k)!r}"
    for f in futures[:-1]:  # the Ack that answers them is read: their outcome is known, a wait ends at once
        status, value = bounded(_outcome, f.wait, tm.TIMED, limit=tm.TIMED + tm.SLACK, what=f"wait() on {f.version}")
        assert status == "err" and isinstance(value, ws.ReceiverError) and not isinstance(value, ws.SyncTimeoutError), (
            f"ACK-2 violated: receiver {k}'s Ack({got[-1]}, error) answers version {f.version} too, but its wait gave "
            f"{value!r}")
        check_receiver_error(ws, value, f"wait() on version {f.version}")
        assert value.causes.get(k) == "error" and value.version == f.version, (
            f"ACK-2 violated: version {f.version}, answered by receiver {k}'s Ack({got[-1]}, error), failed as "
            f"version {value.version} with causes {value.causes}")


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001 - the test looks at it
        return ("err", e)


def _attempt(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    return None


@pytest.mark.req("MSG-2", "MSG-1", "CONS-5", "SM-S-3")
@pytest.mark.needs("push")
def test_each_receiver_is_the_one_its_handle_names(rigs):
    rig = rigs(basic(0), 3)
    for i in range(3):
        rig.send(basic(10 + i), workers=[i])
        rig.check()
    assert [rig.workers[i].call("peek") for i in range(3)] == [1, 2, 3], "MSG-2 violated: a send reached another receiver"


@pytest.mark.req("ROLE-2", "VER-3", "SM-R-2", "ACK-1")
@pytest.mark.needs("pull")
def test_many_versions_arrive_in_order(rigs):
    rig = rigs(basic(0), 1, modes=["pull"])
    seen = []
    for k in range(1, 31):
        f = rig.send_async(basic(k % 5))
        if k % 3 == 0:
            while (v := rig.poll(0)) is not None:
                seen.append(v)
            waited(f, "ACK-2")
    while (v := rig.poll(0)) is not None:
        seen.append(v)
    assert seen == sorted(set(seen)), f"VER-3 violated: polled versions not strictly increasing: {seen}"
    assert seen[-1] == 30, f"ROLE-2 violated: the last version polled is {seen[-1]}, not 30"
    rig.check()


@pytest.mark.req("SEND-1", "ACK-6", "SEND-7", "CON-1")
@pytest.mark.needs("push")
@pytest.mark.parametrize("answer", ["ok", "error"])
def test_an_answer_that_arrives_with_the_end_of_the_channel_counts(ws, rigs, closing, answer):
    """The scripted receiver writes its Ack and closes its end at once, while the sender waits, so one
    read brings both. The Ack came first: with ok the send returns the version (SEND-1), with error it
    raises ReceiverError with cause "error" (ACK-6, SEND-7); only after that is the receiver gone (CON-1)."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    out = {}
    waiter = threading.Thread(target=lambda: out.update(r=_outcome(lambda: rig.sender.send(basic(1), timeout=tm.T))),
                              daemon=True)
    waiter.start()
    v = next_receive(peer, "SEND-1")["version"]
    time.sleep(0.05)  # the sender now waits for the answers
    peer.send_raw(frame(pack(ack(k, v, answer, "" if answer == "ok" else "the scripted receiver's apply failed"))))
    peer.sock.close()
    waiter.join(tm.T + tm.SLACK)
    in_time("r" in out, f"SEND-2 violated: send(timeout={tm.T}) did not return within {tm.T + tm.SLACK:.0f} s")
    status, value = out["r"]
    rig.model.publish(describe(basic(1)), list(range(GOOD + 1)))
    if answer == "ok":
        assert status == "ok" and value == v, (
            f"SEND-1 violated: receiver {k} acked version {v} and then closed its channel; send() gave {value!r}"
        )
    else:
        assert status == "err" and isinstance(value, ws.ReceiverError), (
            f"ACK-6 violated: receiver {k} answered Ack(error) and then closed its channel; send() gave {value!r}"
        )
        check_receiver_error(ws, value, "send()")
        assert value.causes.get(k) == "error", (
            f"SEND-7 violated: receiver {k}'s Ack(error) came before its end of channel, but its cause is "
            f"{value.causes.get(k)!r}"
        )
    for i in range(GOOD):
        rig.model.acked(i, v)
    rig.model.gone(k)
    expect_error(ws, "ReceiverDiedError", rig.sender.send, basic(2), workers=[k], timeout=tm.T, ids="CON-1",
                 what=f"a send to receiver {k} after its channel ended", naming=[k], limit=tm.REACTION + tm.SLACK)
    rig.check()


@pytest.mark.req("WIRE-2", "WIRE-6", "SEND-1")
@pytest.mark.needs("push")
def test_a_frame_of_exactly_the_bound_is_read(ws, rigs, closing):
    """An Ack whose payload is exactly 65,536 bytes (the receiver-to-sender bound, WIRE-2), padded with an
    unknown field (ignored, WIRE-6), is a legal frame: the send it answers returns its version."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    f = rig.send_async(basic(1), workers=[k])
    v = next_receive(peer, "SEND-1")["version"]
    peer.send_raw(frame(padded(ack(k, v), MAX_TO_SENDER)))
    waited(f, "WIRE-2", what=f"wait() answered by an Ack of exactly {MAX_TO_SENDER} bytes")
    rig.send(basic(2), workers=list(range(GOOD)))
    rig.check()


@pytest.mark.req("WIRE-3", "WIRE-6", "SEND-1")
@pytest.mark.needs("push")
def test_unknown_fields_are_ignored_whatever_they_hold(ws, rigs, closing):
    """An Ack with unknown fields holding any legal MessagePack (maps keyed by integers, by maps, by arrays,
    extension types) is a legal frame: the send it answers returns its version (WIRE-3: an ignored key's
    value is not checked)."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    f = rig.send_async(basic(1), workers=[k])
    v = next_receive(peer, "SEND-1")["version"]
    try:
        peer.send_raw(frame(with_odd_fields(ack(k, v))))
    except (BrokenPipeError, ConnectionResetError):
        raise AssertionError("WIRE-3 violated: the sender cut a receiver off for values in unknown fields") from None
    waited(f, "WIRE-3", what="wait() answered by an Ack whose unknown fields hold maps keyed by maps and ext types")
    rig.send(basic(2), workers=list(range(GOOD)))
    rig.check()


@pytest.mark.req("LIFE-8", "SEND-2")
@pytest.mark.needs("push")
def test_close_settles_every_pending_send(ws, rigs, closing):
    """Three sends pending at close(): one whose Ack reached the sender's socket after its last call (nobody
    has read it) completes; one to a real receiver held in reading() fails with ClosedError; one whose scripted
    target answered Ack(error) while its other target (that held receiver) stayed silent raises that failure,
    not ClosedError. All are done, and no wait() waits."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    rig.workers[0].call("hold")  # receiver 0 answers nothing until released
    try:
        answered = rig.send_async(basic(1), workers=[k])
        v1 = next_receive(peer, "SEND-1")["version"]
        silent = rig.send_async(basic(2), workers=[0])
        failed = rig.send_async(basic(3), workers=[0, k])
        v3 = next_receive(peer, "SEND-1")["version"]
        peer.send_raw(frame(pack(ack(k, v1))))  # both reach the sender's socket now, after its last call
        peer.send_raw(frame(pack(ack(k, v3, "error", "the scripted receiver could not apply it"))))
        bounded(rig.sender.close, limit=tm.REACTION + tm.SLACK, what="close() with three sends pending")
    finally:
        rig.workers[0].call("release")
    assert answered.done() and silent.done() and failed.done(), (
        f"LIFE-8 violated: after close() done() is {answered.done()} for an acked send, {silent.done()} for an "
        f"unanswered one, {failed.done()} for a failed one")
    waited(answered, "LIFE-8", timeout=0, version=v1, what="wait() of a send acked before close()")
    expect_error(ws, "ClosedError", silent.wait, 0, ids="LIFE-8", what="wait() of a send nobody answered before close()",
                 limit=tm.SLACK)
    expect_error(ws, "ReceiverError", failed.wait, 0, ids="LIFE-8", limit=tm.SLACK, naming=[k],
                 what="wait() of a send a target failed (Ack(error)) before close(), another target silent")


@pytest.mark.req("SEC-8", "SEC-5")
@pytest.mark.needs("push")
def test_a_heartbeat_flood_starves_no_other_receiver(ws, rigs, closing):
    """One receiver writes Heartbeats without pause, from another process so that the
    flood costs this one nothing; 20 sends to the other receivers then take at most ten times what 20 took
    before the flood, plus a short grace (SEC-8: legal frames from one peer starve no other). The flooder
    may be cut off as a violation; how it ends is not this test's."""
    import signal

    rig, peer, k = scripted(rigs)
    closing(peer)
    good = list(range(GOOD))

    def twenty(first: int) -> float:
        t0 = time.monotonic()
        for v in range(first, first + 20):
            rig.send(basic(v), workers=good, timeout=tm.REACTION)
        return time.monotonic() - t0

    quiet = twenty(1)
    beats = frame(pack({"type": "Heartbeat"})) * 256
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child only writes
        try:
            while True:  # until killed, or until the sender cuts the channel
                peer.sock.sendall(beats)
        finally:
            os._exit(0)
    try:
        time.sleep(0.05)  # the flood has begun
        flooded = twenty(21)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    in_time(flooded <= 10 * quiet + tm.SHORT,
            f"SEC-8 violated: while receiver {k} flooded Heartbeats, 20 sends to the others took {flooded:.3f} s "
            f"against {quiet:.3f} s before")
    rig.check()


def _beat(peer, n: int, k: int, what: str) -> None:
    """n Heartbeats from the scripted receiver, each its own write; a channel cut on an earlier one is MSG-4's."""
    try:
        peer.send_heartbeats(n)
    except (BrokenPipeError, ConnectionResetError):
        raise AssertionError(f"MSG-4 violated: the sender closed receiver {k}'s channel on a Heartbeat {what}") from None


def _next_receive_past_heartbeats(peer, k: int) -> dict:
    """The next Receive, passing over Heartbeats (a sender MAY send them on any channel, MSG-4); none in time is
    a matter of time, the channel cut where a Receive was due a violation of MSG-4 (only Heartbeats came from k)."""
    try:
        msg, fds = peer.recv_past_heartbeats(tm.BOUND)
    except HarnessError as e:
        raise TooSlow(f"SEND-1 violated: no Receive reached the scripted receiver: {e}") from None
    except (PeerClosed, ConnectionResetError):
        raise AssertionError(f"MSG-4 violated: the sender cut receiver {k}'s channel, which sent only Heartbeats and "
                             "Acks, where a Receive was due") from None
    assert msg.get("type") == "Receive", f"expected Receive, got {msg}"
    peer.take_slots(msg["new_slots"], fds)
    return msg


def _join_with_heartbeats(rig, k: int, channel: str):
    """Receiver k of `rig` played here on a handle's channel or a joined one: it answers Init with Heartbeats
    first, then Ready, while connect(workers=[k]) runs: the sender's view of it is connecting (MSG-4)."""
    if channel == "handle":
        peer = ScriptedReceiver(rig.sender.handle(k), k)
    else:
        peer = Joiner(rig.sender.url(k))
        answer = peer.join()
        assert answer.get("type") == "Welcome", f"RDV-5 violated: a join with the URL's id and secret got {answer}"

    def play():
        init = handshake(peer, answer=False)
        _beat(peer, 3, k, "before Ready")
        try:
            peer.send(ready(k, init["version"]))
        except (BrokenPipeError, ConnectionResetError):
            raise AssertionError(f"MSG-4 violated: the sender closed receiver {k}'s channel on Heartbeats before "
                                 "Ready") from None

    connect_beside(rig, k, play, "MSG-4", "a receiver that sent Heartbeats before Ready")
    return peer


@pytest.mark.req("MSG-4", "SM-S-2", "SM-S-3", "ROLE-2")
@pytest.mark.needs("push")
@pytest.mark.parametrize("channel", ["handle", pytest.param("joined", marks=pytest.mark.needs("rendezvous"))])
def test_heartbeats_from_a_receiver_are_ignored(ws, rigs, closing, channel):
    """Heartbeat from a receiver changes nothing (MSG-4), whatever the sender's view of it: connecting (after
    Init, before Ready: connect() completes), live with a Receive pending (before its Ack: the send returns
    the version) and live with no call running (the next send reaches it and returns). The receiver is
    never named failed or gone, and a real receiver beside it is served as before."""
    rig = rigs(basic(0), 2, connect=[0], listen=channel == "joined")
    k = 1
    peer = _join_with_heartbeats(rig, k, channel)
    closing(peer)
    for step in (1, 2, 3):
        desc = describe(basic(step))
        try:
            f = bounded(rig.sender.send_async, basic(step), timeout=tm.T, limit=tm.T + tm.SLACK, what="send_async")
        except HarnessError as e:
            raise TooSlow(f"SEND-5 violated: {e}") from None
        except Exception as e:  # noqa: BLE001 - a receiver named failed or gone for its Heartbeats
            raise AssertionError(f"MSG-4 violated: send_async to receivers [0, {k}], {k} having sent only "
                                 f"Heartbeats and Acks, raised {type(e).__name__}: {e}") from None
        rig.model.publish(desc, [0, k])
        v = _next_receive_past_heartbeats(peer, k)["version"]
        _beat(peer, 2, k, "with a Receive pending")
        try:
            peer.send(ack(k, v))
        except (BrokenPipeError, ConnectionResetError):
            raise AssertionError(f"MSG-4 violated: the sender closed receiver {k}'s channel on Heartbeats with "
                                 "a Receive pending") from None
        waited(f, "MSG-4", what=f"wait() on a send that receiver {k} acked after Heartbeats")
        rig.model.acked(0, v)
        rig.model.acked(k, v)
        _beat(peer, 2, k, "with no call running")
    rig.check([0])


@pytest.mark.req("INIT-1", "WIRE-4")
@pytest.mark.needs("push")
def test_an_init_lists_every_slot(ws, rigs, closing):
    """After versions have gone through several slots, a receiver that joins gets an Init listing every
    slot of the sender, each with its handle (INIT-1): at least all those a receiver connected from the
    start was introduced to (in its Init and its Receives' new_slots)."""
    rig = rigs(basic(0), 3, connect=[0])
    first = join_scripted(rig, 1)
    closing(first)
    known = {s["slot"] for s in first.init["slots"]}
    for step in range(1, 6):
        f = rig.send_async(basic(step), workers=[0, 1])
        m = next_receive(first, "SEND-1")
        known |= {s["slot"] for s in m["new_slots"]}
        first.send(ack(1, m["version"]))
        waited(f, "SEND-1")
    late = join_scripted(rig, 2)
    closing(late)
    listed = {s["slot"] for s in late.init["slots"]}
    assert known <= listed, f"INIT-1 violated: the Init lists slots {sorted(listed)}; the sender has {sorted(known)}"
    assert set(late.slot_fds) == listed, (
        f"WIRE-4 violated: the Init lists slots {sorted(listed)} but brought handles for {sorted(late.slot_fds)}"
    )


@pytest.mark.req("INIT-1", "WIRE-4", "LIFE-1")
@pytest.mark.needs("pull", "push")
def test_an_init_with_more_handles_than_one_message_carries(ws):
    """A pull receiver that never polls pins a slot per version: after 260 versions a receiver that joins
    gets an Init with over 250 slot handles, more than one socket message can carry. It still arrives
    whole, and the joiner holds the latest version (INIT-1, WIRE-4, LIFE-1)."""
    sender = ws.Sender(basic(0), 2, max_slots=300)
    silent = ws.Receiver(sender.handle(0), mode="pull")
    late = ws.Receiver(sender.handle(1))
    try:
        t = threading.Thread(target=lambda: silent.connect(tm.T), daemon=True)
        t.start()
        bounded(sender.connect, tm.T, workers=[0], limit=tm.T + tm.SLACK, what="connect(workers=[0])")
        t.join(tm.T + tm.SLACK)
        for k in range(1, 261):
            bounded(sender.send_async, basic(k % 7), workers=[0], timeout=tm.T, limit=tm.T + tm.SLACK,
                    what=f"send_async #{k}")
        box = {}
        t = threading.Thread(target=lambda: box.update(r=_outcome(lambda: late.connect(tm.T))), daemon=True)
        t.start()
        try:
            bounded(sender.connect, tm.T, workers=[1], limit=tm.T + tm.SLACK, what="connect(workers=[1])")
        except (HarnessError, ws.SyncTimeoutError) as e:
            raise TooSlow(f"INIT-1 violated: a joiner whose Init carries 260 handles did not connect: {e}") from None
        t.join(tm.T + tm.SLACK)
        in_time("r" in box, "INIT-1 violated: receiver.connect of a joiner with a 260-handle Init did not return")
        assert box["r"] == ("ok", 260), f"LIFE-1 violated: the joiner's connect() gave {box['r']}, not version 260"
        with late.reading():
            got = {n: S.raw_bytes(t) for n, t in late.weights.items()}
        assert got == {n: S.raw_bytes(t) for n, t in basic(260 % 7).items()}, "ACK-3 violated: the joiner's bytes"
    finally:
        late.close()
        silent.close()
        sender.close()


@pytest.mark.req("SM-S-2", "SM-S-9", "INIT-2", "SM-S-5")
@pytest.mark.needs("push")
def test_a_ready_ok_of_another_major_version_is_a_violation(ws, rigs, closing):
    """A receiver answering Ready(ok) in protocol 2.0 (it should have refused the Init, INIT-2) is cut off alone.
    A new handle then resets it (SM-S-5): it connects, and a send to it returns (SM-S-9)."""
    rig = rigs(basic(0), GOOD + 1, connect=list(range(GOOD)))
    k = GOOD
    peer = ScriptedReceiver(rig.sender.handle(k), k)
    closing(peer)

    def play():
        msg = handshake(peer, answer=False)
        peer.send({**ready(k, msg["version"]), "protocol": "2.0"})

    t = threading.Thread(target=play, daemon=True)
    t.start()
    e = expect_error(ws, "ReceiverError", rig.sender.connect, tm.T, workers=[k], ids="SM-S-2", naming=[k],
                     what="connect() of a receiver that answered Ready(ok) in protocol 2.0")
    t.join(tm.T)
    assert getattr(e, "causes", {}).get(k) in (None, "violation"), f"SEND-7 violated: cause {e.causes} for receiver {k}"
    in_time(peer.closed_by_peer(tm.REACTION), "SM-S-9 violated: its channel stayed open")
    rig.send(basic(1), workers=list(range(GOOD)))
    rig.check(list(range(GOOD)))
    # SM-S-5, SM-S-9: a new handle resets the receiver cut off; it connects, and sends to it succeed again.
    try:
        again = ScriptedReceiver(rig.sender.handle(k), k)
    except Exception as e:  # noqa: BLE001 - the verdict names it
        raise AssertionError(f"SM-S-5 violated: handle({k}) of a receiver cut off for a violation raised "
                             f"{type(e).__name__}: {e}") from None
    closing(again)
    connect_beside(rig, k, lambda: handshake(again), "SM-S-5", f"receiver {k} restarted after a violation")
    f = rig.send_async(basic(2))
    v = next_receive(again, "SM-S-9")["version"]
    again.send(ack(k, v))
    waited(f, "SM-S-9", what=f"wait() on a send to receiver {k}, restarted after it was cut off for a violation")
    rig.check(list(range(GOOD)))


@pytest.mark.req("API-9", "SEC-5", "MSG-1")
@pytest.mark.needs("drop")
def test_drop_sends_stop_then_closes_the_channel(rigs, ws):
    """drop(k) of a live receiver whose channel has room: the next frame on its channel is Stop, then the
    channel ends (API-9); the other receivers are served as before."""
    rig, peer, k = scripted(rigs)
    try:
        bounded(rig.sender.drop, k, timeout=tm.T, limit=tm.T + tm.SLACK, what=f"sender.drop({k})")
    except HarnessError as err:
        raise TooSlow(f"API-9 violated (API-7): {err}") from None
    rig.model.gone(k)
    try:
        msg, _ = peer.recv(tm.T)
    except PeerClosed:
        raise AssertionError(f"API-9 violated: drop({k}) closed the channel of a live receiver without Stop") from None
    except HarnessError:
        raise TooSlow(f"API-9 violated: drop({k}) sent nothing within {tm.T:.0f} s") from None
    assert msg.get("type") == "Stop", f"API-9, MSG-1 violated: after drop({k}) the next frame is {msg!r:.120}, not Stop"
    in_time(peer.closed_by_peer(tm.REACTION), f"API-9 violated: the channel still runs {tm.REACTION:.0f} s after "
                                              f"drop({k}) sent Stop")
    rig.send(basic(1), workers=list(range(k)))
    rig.check(list(range(k)))



@pytest.mark.req("WIRE-6", "SM-S-2", "WIRE-5", "WIRE-3", "SEND-1")
@pytest.mark.needs("push")
def test_answers_of_a_later_minor_version_or_in_any_encoding_are_taken(ws, rigs, closing):
    """Receiver 1 answers its Init with Ready(ok) of protocol 1.2, a later minor version of major 1 (WIRE-6: only
    another major is a violation, SM-S-2), naming a capability nobody knows. Receiver 2 answers with a Ready no
    canonical encoder writes (keys reversed, 64-bit integers, 32-bit headers, no capabilities: WIRE-5). Both
    connects complete, and a send to both returns once each acked, receiver 2's Ack so encoded too. Then receiver 2
    acks the next version with its version key written twice, the pending version first and a version never sent
    last: a decoder takes the last value (an Ack of no pending version, a violation) or treats the map as one, never
    takes the first (WIRE-3)."""
    rig = rigs(basic(0), 3, connect=[0])
    minor = ScriptedReceiver(rig.sender.handle(1), 1)
    closing(minor)

    def play_minor():
        init = handshake(minor, answer=False)
        minor.send({**ready(1, init["version"]), "protocol": "1.2", "capabilities": ["x-future"]})

    connect_beside(rig, 1, play_minor, "SM-S-2, WIRE-6", "a receiver answering Ready(ok) of protocol 1.2 (same major)")
    enc = ScriptedReceiver(rig.sender.handle(2), 2)
    closing(enc)

    def play_loose():
        init = handshake(enc, answer=False)
        enc.send_raw(frame(loose(without_optional(ready(2, init["version"])))))

    connect_beside(rig, 2, play_loose, "WIRE-5", "a receiver answering Ready with its keys reversed, 64-bit "
                                                 "integers and no capabilities")
    f = rig.send_async(basic(1))
    v = next_receive(minor, "SEND-1")["version"]
    next_receive(enc, "SEND-1")
    minor.send(ack(1, v))
    enc.send_raw(frame(loose(ack(2, v))))
    waited(f, "WIRE-5, WIRE-6", what="wait() answered by a receiver of protocol 1.2 and an Ack in a non-canonical "
                                     "encoding")
    g = rig.send_async(basic(2), workers=[2])
    v2 = next_receive(enc, "SEND-1")["version"]
    enc.send_raw(frame(with_repeated_key(ack(2, v2 + 5), "version", v2)))
    e = expect_error(ws, "ReceiverError", g.wait, tm.T, ids="WIRE-3", naming=[2], limit=tm.REACTION + tm.SLACK,
                     what=f"wait() answered by an Ack whose version key holds {v2}, then {v2 + 5} (the last value "
                          "names no pending version)")
    assert getattr(e, "causes", {}).get(2) == "violation", (
        f"WIRE-3 violated: the Ack whose last version names no pending version gave causes {e.causes}")
    rig.send(basic(3), workers=[0])
    rig.check([0])


#: Answers to Init that break the protocol, each (the frames receiver k writes, given the Init's version v; the rule).
BAD_READIES = {
    "a Ready naming another receiver": (lambda k, v: [frame(pack(ready(0, v)))], "MSG-2"),
    "an Ack before Ready": (lambda k, v: [frame(pack(ack(k, v))), frame(pack(ready(k, v)))], "SM-S-3"),
    "a Ready(ok) of another version than the Init's": (lambda k, v: [frame(pack(ready(k, v + 1)))], "SM-S-9"),
    "a Ready with invalid UTF-8 in its detail": (
        lambda k, v: [frame(pack(ready(k, v, "ok", "zzz")).replace(b"\xa3zzz", b"\xa3\xff\xfez"))], "WIRE-3"),
    "a Ready followed by trailing bytes in its frame": (lambda k, v: [frame(pack(ready(k, v)) + b"\xc0")], "WIRE-3"),
}


@pytest.mark.req("SM-S-2", "SM-S-3", "SM-S-9", "MSG-2", "WIRE-3", "SEC-5")
@pytest.mark.needs("push")
@pytest.mark.parametrize("case", sorted(BAD_READIES))
def test_a_bad_answer_to_init_is_a_violation(ws, rigs, closing, case):
    """Receiver k answers its Init with a frame that breaks the protocol: connect() raises ReceiverError naming k
    alone with cause violation (SEND-7), the sender closes its channel, and the receiver beside it is served as
    before."""
    rig = rigs(basic(0), 2, connect=[0])
    k = 1
    peer = ScriptedReceiver(rig.sender.handle(k), k)
    closing(peer)
    write, rule = BAD_READIES[case]

    def play():
        init = handshake(peer, answer=False)
        for data in write(k, init["version"]):
            try:
                peer.send_raw(data)
            except (BrokenPipeError, ConnectionResetError):
                return  # cut off at the first frame already

    t = threading.Thread(target=play, daemon=True)
    t.start()
    ids = rule if rule == "SM-S-9" else f"{rule}, SM-S-9"
    e = expect_error(ws, "ReceiverError", rig.sender.connect, tm.T, workers=[k], ids=ids, naming=[k],
                     what=f"connect() of a receiver that answered its Init with {case}")
    t.join(tm.T)
    assert getattr(e, "causes", {}).get(k) == "violation", (
        f"{ids} violated: receiver {k} answered its Init with {case}; the error's causes are "
        f"{getattr(e, 'causes', None)}, not a violation")
    in_time(peer.closed_by_peer(tm.REACTION), f"SM-S-9 violated: after {case} the sender kept receiver {k}'s channel "
                                              "open")
    rig.send(basic(1), workers=[0])
    rig.check([0])


@pytest.mark.req("SM-S-1", "SM-S-6", "SEND-4", "INIT-5")
@pytest.mark.needs("push")
def test_a_connecting_receiver_is_refused_sends_and_gets_stop_at_close(ws, rigs, closing):
    """Receiver 1 reads its Init and never answers: connect(workers=[1]) times out and leaves it connecting
    (SM-S-1). A send to it is refused with LocalProtocolError before anything is written (SEND-4); its channel gets
    no Receive. close() then sends it Stop (SM-S-6)."""
    rig = rigs(basic(0), 2, connect=[0])
    k = 1
    peer = ScriptedReceiver(rig.sender.handle(k), k)
    closing(peer)
    t = threading.Thread(target=lambda: _attempt(lambda: handshake(peer, answer=False)), daemon=True)
    t.start()
    expect_error(ws, "SyncTimeoutError", rig.sender.connect, tm.TIMED, workers=[k], ids="INIT-5",
                 what=f"connect({tm.TIMED:g}, workers=[{k}]) of a receiver that never answers its Init",
                 limit=tm.TIMED + tm.SLACK)
    t.join(tm.T)
    assert peer.init is not None, "INIT-1 violated: no Init reached the scripted receiver"
    expect_error(ws, "LocalProtocolError", rig.sender.send, basic(1), workers=[k], timeout=tm.T, ids="SM-S-1, SEND-4",
                 what=f"a send to receiver {k}, connecting (its Init sent, no Ready)")
    assert rig.sender.version == 0, (
        f"SM-S-1, SEND-4 violated: a send refused for a connecting receiver published version {rig.sender.version}")
    try:
        bounded(rig.sender.close, limit=tm.REACTION + tm.SLACK, what="close() with a receiver connecting")
    except HarnessError as err:
        raise TooSlow(f"LIFE-4 violated: {err}") from None
    try:
        msg, _ = peer.recv_past_heartbeats(tm.REACTION)
    except PeerClosed:
        raise AssertionError(f"SM-S-6 violated: close() ended connecting receiver {k}'s channel without Stop") from None
    except HarnessError:
        raise TooSlow(f"SM-S-6 violated: close() sent connecting receiver {k} nothing within {tm.REACTION:.0f} s") from None
    assert msg.get("type") == "Stop", f"SM-S-6, SM-S-1 violated: connecting receiver {k} got {msg!r:.200}, not Stop"


@pytest.mark.req("WIRE-9", "SM-S-2", "INIT-6", "ACK-6")
@pytest.mark.needs("push")
def test_the_spec_vectors_of_refusal_and_failure_are_understood(ws, rigs, closing):
    """Receiver 2 answers its Init with the spec's 'Ready, refusing' frame: connect() raises ReceiverError naming
    it, cause error (INIT-6, WIRE-9). Versions 1 to 8 then go to receiver 0 while 2 is failed: its channel gets no
    Receive (SM-S-2: the sender sends a failed receiver nothing more). A new handle for 2 is answered Ready(ok),
    and Receive 9 with the spec's 'Ack, reporting an error' frame: the send fails naming receiver 2, cause error
    (ACK-6, WIRE-9)."""
    rig = rigs(basic(0), 3, connect=[0])
    refused = ScriptedReceiver(rig.sender.handle(2), 2)
    closing(refused)

    def refuse():
        handshake(refused, answer=False)
        refused.send_raw(spec_vector("Ready, refusing"))

    t = threading.Thread(target=lambda: _attempt(refuse), daemon=True)
    t.start()
    e = expect_error(ws, "ReceiverError", rig.sender.connect, tm.T, workers=[2], ids="WIRE-9, INIT-6", naming=[2],
                     what="connect() of a receiver that answered with the spec's 'Ready, refusing' frame")
    t.join(tm.T)
    assert getattr(e, "causes", {}).get(2) == "error", (
        f"WIRE-9 violated: the spec's 'Ready, refusing' frame gave causes {getattr(e, 'causes', None)}, not error")
    for step in range(1, 9):
        rig.send(basic(step), workers=[0])
    stray = []
    try:  # the failed receiver's channel: nothing more comes on it (Stop aside, were the sender to end it)
        while True:
            stray.append(refused.recv_past_heartbeats(tm.SHORT)[0])
    except (HarnessError, PeerClosed, ConnectionResetError):
        pass
    stray = [m for m in stray if m.get("type") != "Stop"]
    assert not stray, (f"SM-S-2 violated: versions 1 to 8, published after receiver 2 answered Ready(error), put "
                       f"{stray!r:.300} on its channel")
    rig.check([0])
    again = ScriptedReceiver(rig.sender.handle(2), 2)
    closing(again)
    connect_beside(rig, 2, lambda: handshake(again), "SM-S-5", "a receiver restarted after it refused its Init")
    f9 = rig.send_async(basic(9), workers=[2])
    assert f9.version == 9, f"VER-1 violated: the ninth version is {f9.version}"
    next_receive(again, "SEND-1")
    again.send_raw(spec_vector("Ack, reporting an error"))
    e = expect_error(ws, "ReceiverError", f9.wait, tm.T, ids="WIRE-9, ACK-6", naming=[2],
                     what="wait() answered by the spec's 'Ack, reporting an error' frame")
    assert getattr(e, "causes", {}).get(2) == "error", (
        f"WIRE-9 violated: the spec's 'Ack, reporting an error' frame gave causes {getattr(e, 'causes', None)}")


@pytest.mark.req("SM-S-9", "SEND-7")
@pytest.mark.needs("push")
def test_a_ready_error_carrying_a_version_is_a_violation(ws, rigs, closing):
    """Table 1: a Ready(error) carries a null version. One that carries the Init's version breaks a rule of
    section 3, so by SM-S-9 it is a violation (cause `violation`, channel closed), not a plain refusal."""
    rig = rigs(basic(0), 2, connect=[0])
    k = 1
    peer = ScriptedReceiver(rig.sender.handle(k), k)
    closing(peer)

    def play():
        init = handshake(peer, answer=False)
        peer.send_raw(frame(pack(ready(k, init["version"], "error", "cannot"))))

    t = threading.Thread(target=play, daemon=True)
    t.start()
    e = expect_error(ws, "ReceiverError", rig.sender.connect, tm.T, workers=[k], ids="SM-S-9", naming=[k],
                     what="connect() of a receiver that answered Ready(error) with an integer version")
    t.join(tm.T)
    assert getattr(e, "causes", {}).get(k) == "violation", (
        f"SM-S-9 violated: a Ready(error) carrying a version (Table 1: null on error) gave causes "
        f"{getattr(e, 'causes', None)}, not a violation")
    in_time(peer.closed_by_peer(tm.REACTION), "SM-S-9 violated: its channel stayed open")


# ---- clauses of WIRE-2, WIRE-7 and WIRE-9 that need a condition of their own ----

#: The manifest of the spec's test vectors: w float32[2, 3] at 0, step int64 (0-d) at 64, in 128-byte slots.
VECTOR_SPEC = [("w", torch.float32, (2, 3)), ("step", torch.int64, ())]


@pytest.mark.req("WIRE-9", "WIRE-5", "INIT-1", "LIFE-4")
@pytest.mark.needs("push")
def test_the_sender_writes_the_spec_vectors_exactly(ws, rigs, closing):
    """The sender is driven to the very messages of the vectors: weights w float32[2, 3] and step int64, two slots
    (max_slots=2), versions 1 to 7 sent to receiver 0 alone, then receiver 2 (played here) connects: its Init must
    be the spec's Init frame byte for byte (version 7 in slot 1 of two 128-byte slots), the Receive of version 8
    the spec's Receive frame (slot 0, no new slot), and close() must end its channel with the spec's Stop frame
    (WIRE-9). Where the implementation lays the versions out otherwise (another slot for 7, another slot size,
    both of which it may choose), the frames cannot be the vectors' and the test checks nothing."""
    if sys.byteorder != "little":
        pytest.skip("the vectors' Init says byteorder 'little'; this host's Init rightly says otherwise (WIRE-8)")
    rig = rigs(S.distinct_weights(VECTOR_SPEC, 0), 3, connect=[0], max_slots=2)
    for step in range(1, 8):
        rig.send(S.distinct_weights(VECTOR_SPEC, step), workers=[0])
    peer = ScriptedReceiver(rig.sender.handle(2), 2)
    closing(peer)

    def play():
        try:
            init, fds = peer.recv_past_heartbeats(tm.BOUND)  # a Heartbeat MAY come first (MSG-4)
        except HarnessError as e:
            raise TooSlow(f"INIT-1 violated: no Init reached receiver 2: {e}") from None
        assert init.get("type") == "Init", f"SM-S-3 violated: receiver 2's first frame is {init!r:.200}, not Init"
        raw = peer.frames_in[-1]
        peer.take_slots(init["slots"], fds)
        peer.send(ready(2, init["version"]))
        return init, raw

    init, raw = connect_beside(rig, 2, play, "INIT-4", "receiver 2 of the vectors")
    got = frame(raw)
    if (init["version"], init["slot"], [s["nbytes"] for s in init["slots"]]) != (7, 1, [128, 128]):
        checked_nothing(f"the sender put version {init['version']} in slot {init['slot']} of slots "
                        f"{[(s['slot'], s['nbytes']) for s in init['slots']]}: not the vectors' layout (7 in slot 1 of "
                        "two 128-byte slots), which it may choose")
    assert got == spec_vector("Init"), (f"WIRE-9 violated: the Init of the vectors' messages is {got.hex(' ')}, not "
                                        f"the spec's Init frame {spec_vector('Init').hex(' ')}")
    f = rig.send_async(S.distinct_weights(VECTOR_SPEC, 8), workers=[2])
    m = next_receive(peer, "SEND-1")
    if (m["version"], m["slot"]) != (8, 0):
        checked_nothing(f"the sender sent version {m['version']} in slot {m['slot']}, not the vectors' 8 in slot 0")
    got = frame(peer.frames_in[-1])
    assert got == spec_vector("Receive"), (f"WIRE-9 violated: the Receive of version 8 in slot 0 is {got.hex(' ')}, "
                                           f"not the spec's Receive frame {spec_vector('Receive').hex(' ')}")
    peer.send(ack(2, 8))
    waited(f, "SEND-1")
    rig.sender.close()
    try:
        stop, _ = peer.recv_past_heartbeats(tm.REACTION + tm.SLACK)
    except HarnessError as e:
        raise TooSlow(f"LIFE-4 violated: close() sent receiver 2 no Stop: {e}") from None
    except (PeerClosed, ConnectionResetError):
        raise AssertionError("LIFE-4 violated: close() ended receiver 2's channel without Stop") from None
    got = frame(peer.frames_in[-1])
    assert got == spec_vector("Stop"), f"WIRE-9 violated: the Stop is {got.hex(' ')}, not the spec's Stop frame"


@pytest.mark.req("WIRE-2", "WIRE-3", "INIT-3")
@pytest.mark.needs("push", "mapping")
def test_a_refusal_whose_uncut_detail_passes_the_frame_bound_still_fits_the_wire(ws):
    """The sender's weights are twenty arrays whose names are 4,096 bytes each (WIRE-3's bound), the receiver's
    target twenty others of the same length: a detail naming the missing and the unknown ones (the reference names
    eight of each) passes 64 KiB, the bound of a receiver's frame (WIRE-2), not only the 4,096 bytes of a string
    (WIRE-3). The receiver must still send one legal frame, its detail cut, so the sender names it with cause
    'error' (its refusal, INIT-3), not 'violation', and the receiver's connect raises WeightsMismatchError."""
    from .test_handshake import refusal_fits

    ours = [f"s{i:02d}" + "n" * 4093 for i in range(20)]
    theirs = [f"t{i:02d}" + "n" * 4093 for i in range(20)]
    assert all(len(n.encode()) == 4096 for n in ours + theirs) and 16 * 4096 >= MAX_TO_SENDER
    refusal_fits(ws, {n: torch.zeros(3) for n in ours}, {n: torch.zeros(3) for n in theirs}, "WIRE-2, WIRE-3",
                 "the receiver's refusal of forty long names broke the wire")


class _TimedReceiver(ScriptedReceiver):
    """A scripted receiver that notes when it read the first byte of a frame and when it had the whole frame."""

    def __init__(self, handle, rid: int, max_in: int):
        super().__init__(handle, rid)
        self.max_in = max_in  # frames from a sender: WIRE-2's bound of that direction
        self.first_byte: float | None = None

    def _read(self, bound: float) -> bool:
        got = super()._read(bound)
        if got and self.first_byte is None:
            self.first_byte = time.monotonic()
        return got


#: How far below WIRE-2's 64 MiB the near-bound Init is made: room for what an implementation may lay out
#: otherwise (longer integers for offsets, the SlotInfo of each slot), far less than its size.
NEAR_BOUND_MARGIN = 256 * 1024


def _near_bound_weights() -> tuple[dict, int]:
    """Weights (0-d float32 arrays whose names are 4,096 bytes) whose canonical Init is within NEAR_BOUND_MARGIN of
    64 MiB, and that Init's size as this suite encodes it (offsets 64 apart, two slots)."""
    def entry(i: int) -> dict:
        return {"name": f"{i:06d}" + "w" * 4090, "dtype": "float32", "shape": [], "device": "cpu", "offset": 64 * i,
                "nbytes": 4}

    one = len(pack(entry(10**5)))
    n = (MAX_TO_RECEIVER - NEAR_BOUND_MARGIN) // one
    slots = [{"slot": s, "device": "cpu", "nbytes": 64 * n, "ipc": []} for s in (0, 1)]
    size = len(pack({"type": "Init", "protocol": "1.1", "receiver": 0, "manifest": [entry(i) for i in range(n)],
                     "slots": slots, "version": 0, "slot": 0, "byteorder": sys.byteorder, "capabilities": [],
                     "data_plane": None}))
    return {entry(i)["name"]: torch.full((), float(i)) for i in range(n)}, size


@pytest.mark.req("WIRE-2", "WIRE-7", "SEC-7", "INIT-1")
@pytest.mark.needs("push", "mapping")
def test_an_init_near_the_frame_bound_is_one_frame_written_within_the_frame_bound(ws):
    """Weights of some sixteen thousand arrays whose names are 4,096 bytes: their Init, in canonical form, is within
    256 KiB of 64 MiB, the bound of a sender's frame. Sender() takes them (the Init fits: SEC-7 refuses only one that
    does not), and when a receiver (played here, reading as fast as it can) connects, the sender writes the Init as
    one frame of at most 64 MiB (WIRE-2) listing every array, and sends its last byte within the frame bound of its
    first (WIRE-7), while the caller of connect() waits."""
    weights, size = _near_bound_weights()
    assert MAX_TO_RECEIVER - 2 * NEAR_BOUND_MARGIN < size <= MAX_TO_RECEIVER - NEAR_BOUND_MARGIN // 2, size
    try:
        sender = ws.Sender(weights, 1, max_slots=2)
    except ValueError as e:
        raise AssertionError(f"SEC-7, WIRE-2 violated: Sender() refused weights whose Init is {size} bytes, within "
                             f"the frame bound of {MAX_TO_RECEIVER}: {str(e)[:300]}") from None
    peer = None
    try:
        peer = _TimedReceiver(sender.handle(0), 0, MAX_TO_RECEIVER)
        box = {}

        def connect():
            try:
                sender.connect(tm.T + tm.FRAME_BOUND * tm.SCALE)
            except Exception as e:  # noqa: BLE001 - reported below
                box["error"] = e

        t = threading.Thread(target=connect, name="conformance-connect", daemon=True)
        t.start()
        try:
            init, fds = peer.recv_past_heartbeats(tm.T + tm.FRAME_BOUND * tm.SCALE)
        except HarnessError as e:
            raise TooSlow(f"INIT-1, WIRE-7 violated: no whole Init reached the receiver: {e}") from None
        last_byte = time.monotonic()
        length = len(peer.frames_in[-1])
        assert init.get("type") == "Init", f"INIT-1 violated: the first frame is {str(init)[:200]}"
        assert length <= MAX_TO_RECEIVER, f"WIRE-2 violated: an Init of {length} bytes"
        peer.take_slots(init["slots"], fds)
        assert [e["name"] for e in init["manifest"]] == list(weights), (
            "INIT-1 violated: the Init near the frame bound does not list every array in order")
        elapsed = last_byte - peer.first_byte
        in_time(elapsed <= tm.FRAME_BOUND * tm.SCALE,
                f"WIRE-7 violated: the sender took {elapsed:.1f} s from the first byte of an Init of {length} bytes to "
                f"its last, over the frame bound of {tm.FRAME_BOUND:g} s")
        peer.send(ready(0, init["version"]))
        t.join(tm.T + tm.SLACK)
        in_time(not t.is_alive(), "INIT-4 violated: connect did not return after Ready")
        assert "error" not in box, f"INIT-4 violated: connect raised {box.get('error')!r:.300}"
    finally:
        if peer is not None:
            peer.close()
        sender.close()


def _own_peak() -> int | None:
    """This process's peak virtual memory (VmPeak) in bytes, where the sender under test runs; None without /proc."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmPeak:"))
    except (OSError, StopIteration, ValueError):
        return None


@pytest.mark.req("WIRE-2", "SEC-1", "SM-S-9")
@pytest.mark.needs("push")
def test_a_length_prefix_of_4_gib_costs_the_sender_nothing(ws, rigs, closing):
    """A receiver answers a pending Receive with the length prefix 0xFFFFFFFF and nothing after: the sender names it
    with cause violation (WIRE-2), and this process's peak virtual memory, where the sender runs, grows by far less
    than the 4 GiB announced: it allocated nothing for the payload (an allocation counts there even if never
    touched). A peak already past what the allocation would reach hides it: a pass, never a false violation."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    f = rig.send_async(basic(1))
    next_receive(peer, "SEND-1")
    before = _own_peak()
    peer.send_raw(b"\xff\xff\xff\xff")
    _violated_error(ws, rig, f, k, "WIRE-2")
    after = _own_peak()
    if before is None or after is None:
        pytest.skip("this process's memory cannot be read here (/proc)")
    assert after - before < 1 << 30, (f"WIRE-2, SEC-1 violated: reading a length prefix of 4 GiB the sender's process "
                                      f"grew by {(after - before) / 2**30:.1f} GiB of peak virtual memory")


@pytest.mark.req("SEC-6", "ZC-3")
@pytest.mark.needs("zero_copy", "push")
def test_a_zero_copy_receiver_in_the_trainers_process_cannot_write_the_slot(ws):
    """A zero-copy receiver made in the sender's own process (where the sender keeps its slots writable) holds
    version 0. A child forked from this process, with the receiver's mappings as they are here, writes into one of
    its weights: the write must fail there (an error or a fault: SEC-6, ZC-3), and the slot, as the receiver here
    reads it, must still hold the bytes published. The child does only that one write, taking no lock."""
    from .test_handshake import close

    weights = basic(0)
    sender = ws.Sender(weights, 1)
    receiver = ws.Receiver(sender.handle(0), None, mode="push", zero_copy=True)
    try:
        box = Background(lambda: receiver.connect(tm.T), name="conformance-zero-copy-connect")
        bounded(sender.connect, tm.T, limit=tm.T + tm.SLACK, what="sender.connect")
        got = box.join(tm.T + tm.SLACK)
        in_time(got is not None, "INIT-4 violated: the zero-copy receiver's connect did not return")
        assert got == ("ok", 0), f"INIT-4 violated: the zero-copy receiver's connect gave {got!r:.300}"
        with receiver.reading():
            name, t = next((n, t) for n, t in receiver.weights.items() if t.numel())
            before = {n: S.raw_bytes(w) for n, w in receiver.weights.items()}
        assert before == {n: S.raw_bytes(w) for n, w in weights.items()}, "ZC-3 violated: version 0 is not as sent"
        addr = t.data_ptr()
        byte = ctypes.c_ubyte.from_address(addr).value ^ 1  # another value for the first byte: a real change
        pid = os.fork()
        if pid == 0:  # the child: one raw write (no torch after fork), then out, whatever happens
            faulthandler.disable()  # a fault is the expected answer here, not a crash to report
            code = 3
            try:
                ctypes.c_ubyte.from_address(addr).value = byte
                code = 0
            except BaseException:  # noqa: BLE001 - an error is the expected answer
                code = 4
            os._exit(code)
        end = time.monotonic() + tm.T
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done or time.monotonic() > end:
                break
            time.sleep(0.01)  # not a bound: the child is looked at again until the deadline above
        if not done:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise TooSlow(f"the child writing into {name!r} did not end within {tm.T:.0f} s")
        with receiver.reading():
            after = {n: S.raw_bytes(w) for n, w in receiver.weights.items()}
        assert after == before, (f"SEC-6 violated: a write into {name!r} of a zero-copy receiver in the trainer's "
                                 "process reached its slot")
        assert not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0), (
            f"SEC-6, ZC-3 violated: writing into {name!r} of a zero-copy receiver in the trainer's process succeeded "
            "in the writing process (it must fail there: an error or a fault)")
    finally:
        close(receiver, sender)


@pytest.mark.req("WIRE-3", "ACK-6", "SEND-7")
@pytest.mark.needs("push")
def test_an_error_ack_whose_detail_is_exactly_at_the_bound_is_taken(ws, rigs, closing):
    """An Ack(error) whose detail is exactly 4,096 bytes of UTF-8 (two-byte characters): at WIRE-3's bound, not
    past it, so it is the receiver's error (ACK-6), cause 'error', not a violation; its detail is reported."""
    rig, peer, k = scripted(rigs)
    closing(peer)
    f = rig.send_async(basic(1))
    v = next_receive(peer, "SEND-1")["version"]
    detail = "\u00e9" * 2048
    assert len(detail.encode()) == 4096
    peer.send(ack(k, v, "error", detail))
    e = expect_error(ws, "ReceiverError", f.wait, tm.T, ids="ACK-6, WIRE-3", what="wait()", naming=[k])
    cause = getattr(e, "causes", {}).get(k)
    assert cause == "error", (f"WIRE-3 violated: an Ack(error) whose detail is exactly 4,096 bytes reached the sender "
                              f"as {cause!r}, not 'error': {str(e)[:300]}")
