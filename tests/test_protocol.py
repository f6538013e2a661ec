"""The pure core: the transition tables and the two machines, exhaustively and over random event sequences.

The expected behaviour here is written from the spec (sections 4 to 6), not read
from the machines: a reference model of the tables' rules and of ACK-2, ACK-5,
VER-3, SLOT-1, SLOT-5, MSG-1, MSG-2 and INIT-4, against which Hypothesis drives
PeerMachine and ReceiverMachine through long sequences of legal and illegal events.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from weightsync import LocalProtocolError, ProtocolError, RemoteProtocolError
from weightsync.messages import Ack, Init, Ready, Receive, SlotInfo, Stop
from weightsync.protocol import (
    RECEIVER_TABLE,
    SENDER_TABLE,
    PeerMachine,
    PeerState,
    ReceiverState,
    message_event,
    step,
)
from weightsync.receiving import Newest, ReceiverMachine
from weightsync.sending import free_slot, readers


def _events(table):
    return sorted({e for _, e in table})


@pytest.mark.parametrize("state,event", list(itertools.product(PeerState, _events(SENDER_TABLE))))
def test_sender_table_illegal_pairs_raise(state, event):
    """SM-S-1..SM-S-6, SM-S-9: legal pairs move as tabled; a message that may not come is the peer's
    violation (RemoteProtocolError), any other illegal event the caller's (LocalProtocolError)."""
    if (state, event) in SENDER_TABLE:
        assert step(SENDER_TABLE, state, event) is SENDER_TABLE[(state, event)]
        return
    cls = RemoteProtocolError if event.startswith("recv ") else LocalProtocolError
    with pytest.raises(cls) as info:
        step(SENDER_TABLE, state, event)
    assert state.value in str(info.value)
    if cls is RemoteProtocolError:
        assert (info.value.state, info.value.event, info.value.requirement) == (state.value, event, "SM-S-9")


@pytest.mark.parametrize("state,event", list(itertools.product(ReceiverState, _events(RECEIVER_TABLE))))
def test_receiver_table_illegal_pairs_raise(state, event):
    """SM-R-1..SM-R-4, SM-R-7."""
    if (state, event) in RECEIVER_TABLE:
        assert step(RECEIVER_TABLE, state, event) is RECEIVER_TABLE[(state, event)]
        return
    with pytest.raises(ProtocolError) as info:
        step(RECEIVER_TABLE, state, event)
    if event.startswith("recv "):
        assert info.value.requirement == "SM-R-7" and info.value.state == state.value


def test_table_shapes_that_the_spec_relies_on():
    """SM-S-3, SM-S-5, SM-R-2: Receive/Ack only when live; no new handle for a live receiver."""
    assert {s for (s, e) in SENDER_TABLE if e in ("send Receive", "recv Ack")} == {PeerState.LIVE}
    assert (PeerState.LIVE, "new handle") not in SENDER_TABLE
    assert {s for (s, e) in RECEIVER_TABLE if e == "recv Receive"} == {ReceiverState.LIVE}
    assert all(RECEIVER_TABLE[(s, "close")] is ReceiverState.CLOSED for s in ReceiverState)


def test_message_events():
    assert message_event(Ready(0, 1, "ok")) == "recv Ready(ok)"
    assert message_event(Ack(0, 1, "ok")) == "recv Ack"


def test_free_slot_skips_latest_pending_and_held():
    """SLOT-2."""
    assert free_slot([0, 1, 2], 0, [{1}]) == 2
    assert free_slot([0, 1], 0, [{1}]) is None
    assert free_slot([0, 1], None, []) == 0
    m = PeerMachine(3)
    m.send_init(0, 1, [0, 1])
    assert readers(1, [m]) == [3] and readers(0, [m]) == []


# ---- the sender's view of one receiver, against a model written from the spec ----

STATUS = st.sampled_from(["ok", "error"])


class PeerModel(RuleBasedStateMachine):
    """Random events on one PeerMachine; every outcome predicted from the spec's rules."""

    def __init__(self):
        super().__init__()
        self.m = PeerMachine(1)
        self.state = PeerState.UNCONNECTED
        self.pending: dict[int, int] = {}
        self.held: set[int] = set()
        self.holds = False
        self.next_version = 1
        self.slots = [0, 1, 2]  # what Init introduces; slot 3 comes with the first Receive
        self.introduced = False

    def expect_illegal(self, event, call):
        cls = RemoteProtocolError if event.startswith("recv ") else LocalProtocolError
        with pytest.raises(cls):
            call()
        assert self.m.state is self.state, "an illegal event changed the state"

    def go(self, event, call):
        """Runs `call`: (True, its result) when the table allows `event`, else checks the error and (False, None)."""
        if (self.state, event) not in SENDER_TABLE:
            self.expect_illegal(event, call)
            return False, None
        out = call()
        self.state = SENDER_TABLE[(self.state, event)]
        return True, out

    @rule(slot=st.sampled_from([0, 1, 2]))
    def send_init(self, slot):
        v = self.next_version - 1
        if self.go("send Init", lambda: self.m.send_init(v, slot, self.slots))[0]:
            self.pending, self.introduced = {v: slot}, False
            self.held = set()

    @rule(slot=st.sampled_from([0, 1, 2, 3]))
    def send_receive(self, slot):
        v = self.next_version
        legal, new = self.go("send Receive", lambda: self.m.send_receive(v, slot, self.slots + [3]))
        if legal:
            self.next_version += 1
            self.pending[v] = slot
            assert new == ([] if self.introduced else [3]), f"SLOT-1, SLOT-5: slot 3 introduced once, got {new}"
            self.introduced = True

    @rule(status=STATUS, delta=st.sampled_from([0, 0, 0, 1]))
    def recv_ready(self, status, delta):
        init_version = next(iter(self.pending), None)
        version = None if init_version is None else init_version + delta
        if status == "error":  # a refusal carries null (Table 1); one with a version is a violation (SM-S-9)
            version = None if delta == 0 else init_version
        msg = Ready(1, version, status, "", holds_slot=True)
        event = message_event(msg)
        if (self.state, event) not in SENDER_TABLE:
            self.expect_illegal(event, lambda: self.m.handle(msg))
            return
        if status == "ok" and delta:
            with pytest.raises(RemoteProtocolError) as info:
                self.m.handle(msg)
            assert info.value.requirement == "INIT-4"
            self.cut("protocol violation")
            return
        if status == "error" and version is not None:
            with pytest.raises(RemoteProtocolError) as info:
                self.m.handle(msg)
            assert info.value.requirement == "SM-S-9"
            self.cut("protocol violation")
            return
        settled = self.m.handle(msg)
        assert settled.versions == (init_version,)
        self.state = SENDER_TABLE[(self.state, event)]
        self.held = {self.pending[init_version]} if status == "ok" else set()
        self.holds = status == "ok"
        self.pending = {}

    @rule(pick=st.integers(0, 5), status=STATUS)
    def recv_ack(self, pick, status):
        versions = sorted(self.pending) or [self.next_version]
        v = versions[pick % len(versions)] if pick < 4 else self.next_version + pick  # 4, 5: not pending
        msg = Ack(1, v, status)
        if (self.state, "recv Ack") not in SENDER_TABLE:
            self.expect_illegal("recv Ack", lambda: self.m.handle(msg))
            return
        if v not in self.pending:
            with pytest.raises(RemoteProtocolError) as info:
                self.m.handle(msg)
            assert info.value.requirement == "ACK-5" and info.value.state == "live"
            self.cut("protocol violation")
            return
        settled = self.m.handle(msg)
        assert settled.versions == tuple(u for u in sorted(self.pending) if u <= v), "ACK-2"
        slot = self.pending[v]
        self.pending = {u: s for u, s in self.pending.items() if u > v}
        if self.holds:
            self.held = {slot} if status == "ok" else self.held | {slot}

    @rule(which=st.sampled_from(["receiver", "status"]))
    def recv_malformed(self, which):
        msg = Ack(2, 1, "ok") if which == "receiver" else Ack(1, 1, "maybe")
        if not self.m.active:
            with pytest.raises(ProtocolError):
                self.m.handle(msg)
            assert self.m.state is self.state
            return
        with pytest.raises(RemoteProtocolError) as info:
            self.m.handle(msg)
        assert info.value.requirement == ("MSG-2" if which == "receiver" else "MSG-1")
        self.cut("protocol violation")

    def cut(self, event):
        failed = self.m.violation(RuntimeError("x")) if event == "protocol violation" else self.m.channel_closed("x")
        assert set(failed) == set(self.pending)
        self.state = SENDER_TABLE[(self.state, event)]
        self.pending, self.held, self.holds = {}, set(), False

    @rule()
    def channel_closed(self):
        if (self.state, "channel closed") not in SENDER_TABLE:
            self.expect_illegal("channel closed", lambda: self.m.channel_closed("x"))
            return
        self.cut("channel closed")
        assert self.m.cause == "died"

    @rule()
    def new_handle(self):
        if self.go("new handle", self.m.new_handle)[0]:
            self.pending, self.held, self.holds, self.introduced = {}, set(), False, False

    @rule()
    def send_stop(self):
        if self.go("send Stop", self.m.send_stop)[0]:
            self.pending, self.held = {}, set()

    @invariant()
    def agrees(self):
        assert self.m.state is self.state
        assert self.m.pending == self.pending
        expected_pins = set(self.pending.values()) | self.held if self.state in (PeerState.CONNECTING, PeerState.LIVE) else set()
        assert self.m.pins() == expected_pins, "SLOT-2, ZC-2: the slots it may read"
        assert list(self.m.pending) == sorted(self.m.pending), "VER-3: pending versions increase"


TestPeerMachine = PeerModel.TestCase
TestPeerMachine.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)


# ---- the receiver's own machine ----

def _init(slots=(0, 1), slot=0, version=0, receiver=0, protocol="1.1", byteorder="little"):
    return Init(protocol, receiver, (), tuple(SlotInfo(s, "cpu", 64) for s in slots), version, slot, byteorder)


class ReceiverModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.m = ReceiverMachine(0, byteorder="little")
        self.state = ReceiverState.NEW
        self.known: set[int] = set()
        self.received = None
        self.next_slot = 2

    def violation(self, msg, rule_id):
        with pytest.raises(RemoteProtocolError) as info:
            self.m.handle(msg)
        assert info.value.requirement == rule_id, (info.value, rule_id)
        assert info.value.state == self.state.value

    @rule(accept=st.booleans(), dup=st.booleans())
    def init(self, accept, dup):
        msg = _init(slots=(0, 0) if dup else (0, 1))
        if self.state is not ReceiverState.NEW:
            self.violation(msg, "SM-R-7")
            return
        if dup:
            self.violation(msg, "SLOT-5")
            return
        self.m.handle(msg)
        self.known = {0, 1}
        self.m.check_init(msg)
        if accept:
            self.m.accept_init(0)
            self.state, self.received = ReceiverState.LIVE, 0
        else:
            self.m.refuse_init()
            self.state = ReceiverState.FAILED

    @rule(delta=st.integers(-2, 3), new=st.booleans(), known_slot=st.booleans(), again=st.booleans())
    def receive(self, delta, new, known_slot, again):
        base = self.received if self.received is not None else 0
        version = base + delta
        new_slots = ()
        if new:
            sid = 0 if again and self.known else self.next_slot
            new_slots = (SlotInfo(sid, "cpu", 64),)
        slot = next(iter(sorted(self.known)), 99) if known_slot else 77
        if slot == 77 and new:
            slot = new_slots[0].slot if not again else 77
        msg = Receive(version, slot, new_slots)
        if self.state is not ReceiverState.LIVE:
            self.violation(msg, "SM-R-7")
            return
        if version <= self.received:
            self.violation(msg, "VER-3")
            return
        if new and again and self.known:
            self.violation(msg, "SLOT-5")
            return
        if slot not in self.known | {s.slot for s in new_slots}:
            self.violation(msg, "SLOT-1")
            return
        assert self.m.handle(msg) is msg
        self.known |= {s.slot for s in new_slots}
        if new and not again:
            self.next_slot += 1
        self.received = version

    @rule()
    def stop(self):
        if (self.state, "recv Stop") not in RECEIVER_TABLE:
            self.violation(Stop(), "SM-R-7")
            return
        self.m.handle(Stop())
        self.state = ReceiverState.STOPPED

    @rule()
    def channel_closed(self):
        self.m.channel_closed()
        if self.state in (ReceiverState.NEW, ReceiverState.LIVE):
            self.state = ReceiverState.STOPPED

    @rule()
    def close(self):
        self.m.close()
        self.state = ReceiverState.CLOSED

    @invariant()
    def agrees(self):
        assert self.m.state is self.state
        assert self.m.stopped == (self.state in (ReceiverState.STOPPED, ReceiverState.FAILED, ReceiverState.CLOSED)), "SM-R-8"
        if self.state is not ReceiverState.NEW:
            assert self.m.known == self.known or self.state is not ReceiverState.LIVE


TestReceiverMachine = ReceiverModel.TestCase
TestReceiverMachine.settings = settings(max_examples=200, stateful_step_count=30, deadline=None)


@pytest.mark.parametrize("init,rule_id", [
    (_init(protocol="2.0"), "INIT-2"),
    (_init(receiver=5), "MSG-2"),
    (_init(slot=7), "SLOT-1"),
])
def test_init_that_must_be_refused(init, rule_id):
    """INIT-2, MSG-2, SLOT-1: check_init names the rule; the receiver then answers Ready(error)."""
    m = ReceiverMachine(0, byteorder="little")
    m.handle(init)
    with pytest.raises(RemoteProtocolError) as info:
        m.check_init(init)
    assert info.value.requirement == rule_id


def test_an_init_of_another_byte_order_cannot_be_used():
    """WIRE-8: well formed but unusable, refused as INIT-6 says (a ValueError, not a violation)."""
    m = ReceiverMachine(0, byteorder="little")
    init = _init(byteorder="big")
    m.handle(init)
    with pytest.raises(ValueError, match="WIRE-8"):
        m.check_init(init)


@given(st.lists(st.integers(1, 50), min_size=1, max_size=8, unique=True), st.integers(0, 60))
def test_an_ack_answers_every_pending_version_up_to_it(versions, ack):
    """ACK-2, ACK-5: Ack(v) settles exactly the pending versions <= v, and only a pending v is legal."""
    m = PeerMachine(0)
    m.send_init(0, 0, [0, 1])
    m.handle(Ready(0, 0, "ok"))
    for v in sorted(versions):
        m.send_receive(v, 1, [0, 1])
    if ack not in versions:
        with pytest.raises(RemoteProtocolError, match="ACK-5"):
            m.handle(Ack(0, ack, "ok"))
        return
    settled = m.handle(Ack(0, ack, "ok"))
    assert settled.versions == tuple(v for v in sorted(versions) if v <= ack)
    assert sorted(m.pending) == [v for v in sorted(versions) if v > ack]


def test_send_receive_refuses_a_version_that_does_not_increase():
    """VER-3 on the sender's side: the driver can never tell a receiver an older version."""
    m = PeerMachine(0)
    m.send_init(4, 0, [0, 1])
    m.handle(Ready(0, 4, "ok"))
    with pytest.raises(LocalProtocolError, match="VER-3"):
        m.send_receive(4, 1, [0, 1])


# ---- Heartbeat (MSG-4) and the join table (Table 14-1) ----


def test_heartbeat_changes_nothing_on_either_side():
    """MSG-4: legal in connecting and live at the sender, in new and live at a receiver; it settles nothing."""
    from weightsync.messages import Heartbeat
    from weightsync.protocol import NOTHING, PeerMachine, PeerState, ReceiverState

    peer = PeerMachine(0)
    with pytest.raises(RemoteProtocolError):  # unconnected: its channel is not read (SM-S-4)
        peer.handle(Heartbeat())
    peer = PeerMachine(0)
    peer.send_init(0, 0, [0, 1])
    assert peer.handle(Heartbeat()) is NOTHING and peer.state is PeerState.CONNECTING and peer.pending == {0: 0}
    rec = ReceiverMachine(0)
    assert rec.handle(Heartbeat()) == Heartbeat() and rec.state is ReceiverState.NEW and rec.received is None
    rec.accept_init(3)
    assert rec.handle(Heartbeat()) == Heartbeat() and rec.state is ReceiverState.LIVE and rec.received == 3


def test_the_join_machines_follow_table_14_1():
    from weightsync.join import JoinMachine, JoinState
    from weightsync.messages import Hello, Join, Refuse, Welcome

    joiner = JoinMachine(listener=False)
    assert joiner.handle(Hello("1.1", b"n" * 32)) is JoinState.JOINING
    assert joiner.handle(Welcome(b"p" * 32), valid=True) is JoinState.JOINED
    joiner = JoinMachine(listener=False)
    joiner.handle(Hello("1.7", b"n" * 32))  # another minor: joins
    with pytest.raises(RemoteProtocolError) as e:
        joiner.handle(Welcome(b"p" * 32), valid=False)
    assert e.value.requirement == "RDV-7" and joiner.state is JoinState.ENDED
    with pytest.raises(RemoteProtocolError) as e:
        JoinMachine(listener=False).handle(Hello("2.0", b"n" * 32))
    assert e.value.requirement == "INIT-2"
    with pytest.raises(RemoteProtocolError) as e:
        JoinMachine(listener=False).handle(Welcome(b"p" * 32))  # before Join: out of order
    assert e.value.requirement == "RDV-3"
    joiner = JoinMachine(listener=False)
    joiner.handle(Hello("1.1", b"n" * 32))
    assert joiner.handle(Refuse("no")) is JoinState.ENDED
    listener = JoinMachine(listener=True)
    assert listener.handle(Join(0, b"n" * 32, b"p" * 32), valid=False) is JoinState.ENDED
    listener = JoinMachine(listener=True)
    assert listener.handle(Join(0, b"n" * 32, b"p" * 32), valid=True) is JoinState.JOINED
    with pytest.raises(RemoteProtocolError):
        listener.handle(Join(0, b"n" * 32, b"p" * 32), valid=True)  # a second Join
    assert JoinMachine(listener=True).event("join bound") is JoinState.ENDED


def test_the_newest_pending_version_supersedes_older_ones():
    """ACK-2 at a receiver: only the newest version waits; one held back waits again unless a newer came."""
    newest = Newest()
    assert newest.take() is None
    newest.offer(Receive(1, 0))
    newest.offer(Receive(2, 1))
    taken = newest.take()
    assert taken == Receive(2, 1) and newest.pending is None
    newest.untake(taken)
    assert newest.pending == Receive(2, 1)
    taken = newest.take()
    newest.offer(Receive(3, 0))
    newest.untake(taken)  # a newer one came while it was held back: the newer one waits
    assert newest.take() == Receive(3, 0)


def test_a_channel_that_ends_before_ready_says_the_receiver_never_connected():
    """Issue 24: a worker that was never started read as "died: Broken pipe"; before its Ready the failure
    says it never connected and what to start, and a live receiver's end of channel says only what happened."""
    connecting = PeerMachine(3)
    connecting.send_init(0, 0, [0, 1])
    connecting.channel_closed("channel closed: [Errno 32] Broken pipe")
    assert connecting.failure.startswith("never connected (channel closed") and "sender.handle(3)" in connecting.failure
    joined = PeerMachine(3)  # one that joined by URL did call connect(): its handshake did not finish
    joined.joined()
    joined.send_init(0, 0, [])
    joined.channel_closed("nothing heard for 5 s: its lease expired (NET-4)")
    assert joined.failure.startswith("never connected (nothing heard") and "joined by URL" in joined.failure
    assert "called connect()" not in joined.failure
    live = PeerMachine(3)
    live.send_init(0, 0, [0, 1])
    live.handle(Ready(3, 0, "ok"))
    live.channel_closed("channel closed: EOF")
    assert live.failure == "channel closed: EOF"
