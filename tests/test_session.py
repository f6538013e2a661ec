"""The sans-I/O session (session.py): bytes and the time in, events out, with no socket, thread or clock.

Each test feeds a Session the bytes a peer would send and reads what it decides:
what an answer settles, that the channel ended, that a Heartbeat is due, or the
violation it raises, naming the requirement.
"""

from __future__ import annotations

import pytest

from weightsync import limits, wire
from weightsync.errors import LocalProtocolError, RemoteProtocolError
from weightsync.messages import OK, Ack, Heartbeat, Init, Ready, Receive, SlotInfo, Stop
from weightsync.protocol import PeerMachine, Settled
from weightsync.receiving import ReceiverMachine
from weightsync.session import HEARTBEAT_DUE, Ended, Message, Session
from weightsync.timers import Liveness


def sender_session(network: bool = False, now: float = 0.0) -> tuple[Session, PeerMachine]:
    machine = PeerMachine(0)
    session = Session(wire.FROM_RECEIVER, wire.MAX_TO_SENDER)
    session.attach(machine, Liveness(now, lease=5.0, heartbeat=1.0) if network else None)
    machine.send_init(0, 0, [0, 1])
    return session, machine


def receiver_session() -> tuple[Session, ReceiverMachine]:
    machine = ReceiverMachine(0)
    session = Session(wire.FROM_SENDER, wire.MAX_TO_RECEIVER, takes_handles=True)
    session.attach(machine)
    return session, machine


def test_an_answer_settles_what_it_answers_and_heartbeats_settle_nothing():
    session, machine = sender_session()
    data = wire.frame(Heartbeat()) + wire.frame(Ready(0, 0, OK)) + wire.frame(Heartbeat())
    session.receive_data(data[:7], [], 0.0)
    assert session.next_event(0.0) is None  # the Heartbeat is ignored; Ready is not whole yet
    session.receive_data(data[7:], [], 0.1)
    assert session.next_event(0.1) == Settled((0,), OK, "")
    assert session.next_event(0.1) is None and machine.state.value == "live"
    session.receive_eof()
    assert session.next_event(0.2) == Ended("its channel closed (process exited or receiver closed)")


def test_a_broken_frame_is_a_violation_naming_its_requirement():
    session, _ = sender_session()
    session.receive_data(b"\x00\x00\x00\x02\xc1\xc1", [], 0.0)  # 0xc1 is never used in MessagePack
    with pytest.raises(RemoteProtocolError) as e:
        session.next_event(0.0)
    assert e.value.requirement == "WIRE-3"
    session, _ = sender_session()
    session.receive_data(wire.LENGTH.pack(limits.MAX_TO_SENDER + 1), [], 0.0)
    with pytest.raises(RemoteProtocolError) as e:
        session.next_event(0.0)
    assert e.value.requirement == "WIRE-2"
    session, _ = sender_session()
    session.receive_data(wire.frame(Ack(0, 5, OK)), [], 0.0)
    with pytest.raises(RemoteProtocolError) as e:
        session.next_event(0.0)
    assert e.value.requirement == "SM-S-9"  # an Ack while connecting


def test_a_frame_left_unfinished_is_cut_off_after_the_frame_bound():
    session, _ = sender_session()
    session.receive_data(wire.frame(Ready(0, 0, OK))[:3], [], 10.0)
    assert session.next_event(10.0 + limits.FRAME_BOUND) is None
    assert session.timer(12.0) == pytest.approx(limits.FRAME_BOUND - 2)
    with pytest.raises(RemoteProtocolError) as e:
        session.next_event(10.0 + limits.FRAME_BOUND + 0.01)
    assert e.value.requirement == "WIRE-7" and e.value.state == "connecting"


def test_a_network_session_says_when_to_speak_and_when_the_peer_is_gone():
    session, _ = sender_session(network=True)
    assert session.next_event(0.5) is None and session.timer(0.5) == pytest.approx(0.5)
    assert session.next_event(1.0) is HEARTBEAT_DUE
    assert session.send(Heartbeat(), 1.0) == wire.frame(Heartbeat())  # sending counts as speaking
    assert session.next_event(1.5) is None
    session.receive_data(wire.frame(Heartbeat()), [], 4.0)
    assert session.next_event(4.0) is HEARTBEAT_DUE  # heard at 4.0; our own silence since 1.0
    session.send(Heartbeat(), 4.0)
    for t in (5.0, 6.0, 7.0, 8.0):
        assert session.next_event(t) is HEARTBEAT_DUE
        session.send(Heartbeat(), t)
    assert session.next_event(9.0) is HEARTBEAT_DUE  # exactly the lease since 4.0: not yet expired
    session.send(Heartbeat(), 9.0)
    ended = session.next_event(9.01)
    assert isinstance(ended, Ended) and ended.expired and "lease expired" in ended.why


def test_a_receiver_session_hands_over_what_its_machine_accepts():
    session, machine = receiver_session()
    init = Init("1.1", 0, (), (SlotInfo(0, "cpu", 64), SlotInfo(1, "cpu", 64)), 0, 0)
    session.receive_data(wire.frame(Heartbeat()) + wire.frame(init), [11, 12], 0.0)
    event = session.next_event(0.0)
    assert event == Message(init, [11, 12])  # the handles in list order (WIRE-4); the Heartbeat ignored (MSG-4)
    machine.accept_init(0)
    session.receive_data(wire.frame(Heartbeat()) + wire.frame(Receive(1, 1)) + wire.frame(Stop()), [], 0.1)
    assert session.next_event(0.1) == Message(Receive(1, 1), [])
    assert session.next_event(0.1) == Message(Stop(), []) and machine.stopped


def test_a_refused_message_leaves_its_handles_to_be_closed():
    session, _ = receiver_session()
    receive = Receive(1, 0, (SlotInfo(0, "cpu", 64),))  # a Receive before Init: SM-R-7
    session.receive_data(wire.frame(receive), [21], 0.0)
    with pytest.raises(RemoteProtocolError) as e:
        session.next_event(0.0)
    assert e.value.requirement == "SM-R-7"
    assert session.take_fds() == [21] and session.take_fds() == []


def test_handles_with_no_frame_that_lists_them_are_a_violation():
    session, _ = receiver_session()
    session.receive_data(wire.frame(Heartbeat()), [31], 0.0)
    with pytest.raises(RemoteProtocolError) as e:
        session.next_event(0.0)
    assert e.value.requirement == "WIRE-4"
    assert session.take_fds() == [31]


# ---- bytes out: every frame to a receiver is a step of its machine first (h11's send) ----

SLOT = SlotInfo(0, "cpu", 64)


def fresh_sender_session() -> tuple[Session, PeerMachine]:
    machine = PeerMachine(0)
    session = Session(wire.FROM_RECEIVER, wire.MAX_TO_SENDER)
    session.attach(machine)
    return session, machine


def live_sender_session() -> tuple[Session, PeerMachine]:
    session, machine = fresh_sender_session()
    session.send(Init("1.1", 0, (), (SLOT, SlotInfo(1, "cpu", 64)), 0, 0), 0.0)
    session.receive_data(wire.frame(Ready(0, 0, OK)), [], 0.0)
    assert session.next_event(0.0) == Settled((0,), OK, "")
    return session, machine


def test_init_through_the_session_makes_the_receiver_connecting_and_knowing_its_slots():
    session, machine = fresh_sender_session()
    data = session.send(Init("1.1", 0, (), (SLOT,), 3, 0), 0.0)
    assert data == wire.frame(Init("1.1", 0, (), (SLOT,), 3, 0))
    assert machine.state.value == "connecting" and machine.pending == {3: 0} and machine.known == {0}


@pytest.mark.parametrize("msg,rule", [
    (Receive(1, 0), "SM-S-3"),  # not live yet
    (Heartbeat(), "NET-4"),  # nothing to keep alive before Init
    (Ack(0, 1, OK), "MSG-3"),  # a receiver's message
])
def test_an_illegal_first_frame_raises_before_any_byte_exists(msg, rule):
    """SM-S-3, MSG-3: the session refuses what the sender's table does not allow, and changes nothing."""
    session, machine = fresh_sender_session()
    with pytest.raises(LocalProtocolError):
        session.send(msg, 0.0)
    assert machine.state.value == "unconnected" and machine.pending == {}


def test_a_receive_must_be_newer_name_a_known_slot_and_introduce_only_new_ones():
    """VER-3, SLOT-1, SLOT-5 on the way out: each refused Receive leaves the machine as it was."""
    session, machine = live_sender_session()
    for bad in (Receive(0, 0), Receive(1, 5), Receive(1, 1, (SLOT,))):
        with pytest.raises(LocalProtocolError):
            session.send(bad, 0.0)
        assert machine.pending == {} and machine.known == {0, 1}
    session.send(Receive(1, 2, (SlotInfo(2, "cpu", 64),)), 0.0)
    assert machine.pending == {1: 2} and machine.known == {0, 1, 2}
    session.send(Receive(2, 9), 0.0, slot=1)  # the network profile names slot 0 for the sender's slot 1 (NET-1)
    assert machine.pending == {1: 2, 2: 1}


def test_stop_is_sent_once_and_a_drop_allows_exactly_one():
    """SM-S-6, API-9: Stop moves to stopped, and no second Stop follows; a drop moves to gone and lets one Stop
    out on the channel that closes next."""
    session, machine = live_sender_session()
    session.send(Stop(), 0.0)
    assert machine.state.value == "stopped"
    with pytest.raises(LocalProtocolError):
        session.send(Stop(), 0.0)
    session, machine = live_sender_session()
    session.send(Receive(1, 1), 0.0)
    assert machine.drop("dropped") == (1,) and machine.state.value == "gone" and machine.cause == "died"
    session.send(Stop(), 0.0)
    with pytest.raises(LocalProtocolError):
        session.send(Stop(), 0.0)
    with pytest.raises(LocalProtocolError):
        session.send(Heartbeat(), 0.0)


def test_a_receiver_answers_each_init_once_and_acks_only_what_it_received_going_forward():
    """SM-R-1, INIT-4, ACK-2, MSG-3 on the way out: a receiver's session refuses, before any byte, a Ready
    with no Init or for another version, a second Ready, an Ack of a version it never received or already
    answered, and any message that goes the other way."""
    session, machine = receiver_session()
    for bad in (Ready(0, 0, OK), Ack(0, 0, OK), Receive(1, 0), Stop()):
        with pytest.raises(LocalProtocolError):
            session.send(bad, 0.0)
    session.receive_data(wire.frame(Init("1.1", 0, (), (SLOT,), 3, 0)), [7], 0.0)
    assert isinstance(session.next_event(0.0), Message)
    with pytest.raises(LocalProtocolError):
        session.send(Ready(0, 2, OK), 0.0)
    session.send(Ready(0, 3, OK), 0.0)
    machine.accept_init(3)
    with pytest.raises(LocalProtocolError):
        session.send(Ready(0, 3, OK), 0.0)
    with pytest.raises(LocalProtocolError):
        session.send(Ack(0, 4, OK), 0.0)  # not received yet
    session.receive_data(wire.frame(Receive(4, 0)) + wire.frame(Receive(5, 0)), [], 0.0)
    assert isinstance(session.next_event(0.0), Message) and isinstance(session.next_event(0.0), Message)
    session.send(Ack(0, 4, "error", "could not apply"), 0.0)
    session.send(Heartbeat(), 0.0)
    with pytest.raises(LocalProtocolError):
        session.send(Ack(0, 4, OK), 0.0)  # answered already
    session.send(Ack(0, 5, OK), 0.0)
    assert machine.answered == 5


# ---- found by review: a close in another thread, a closed channel, a join judged with no judge ----


def test_a_ready_after_close_is_the_end_of_the_channel_not_a_protocol_error():
    """LIFE-6: close() in another thread during connect() closes the channel and the machine; the handshake's
    Ready then finds the receiver gone (False: connect() raises ClosedError), never LocalProtocolError."""
    import os
    import socket

    from weightsync import transport
    from weightsync.applier import Applier
    from weightsync.clock import monotonic
    from weightsync.rwlock import ApplyLock

    a, b = socket.socketpair()
    ch = transport.Channel(a, allowed=wire.FROM_SENDER, max_in=wire.MAX_TO_RECEIVER, takes_handles=True)
    machine = ReceiverMachine(0)
    ch.session.attach(machine)
    r, w = os.pipe()
    socket.send_fds(b, [wire.frame(Init("1.1", 0, (), (SLOT,), 3, 0))], [r])  # the slot's handle beside it
    os.close(r), os.close(w)
    ch.fill()
    assert isinstance(ch.next_event(), Message)
    applier = Applier(0, ch, machine, ApplyLock(), None, monotonic, lambda: True)
    ch.close()
    machine.close()
    assert applier.answer(Ready(0, 3, OK)) is False
    assert applier.answer(Ready(0, None, "error", "refused")) is False
    b.close()


def test_the_pump_ends_at_once_on_a_channel_closed_here():
    """A channel another thread closed (after a violation, at close()) ends the wait at once: no spin on the
    closed descriptor until the deadline."""
    import socket
    import time

    from weightsync import transport
    from weightsync.clock import Deadline

    a, b = socket.socketpair()
    ch = transport.Channel(a, allowed=wire.FROM_SENDER, max_in=wire.MAX_TO_RECEIVER, takes_handles=True)
    ch.session.attach(ReceiverMachine(0))
    ch.close()
    start = time.monotonic()
    assert isinstance(ch.wait_event(Deadline(3.0)), Ended)
    assert time.monotonic() - start < 1.0
    b.close()


def test_a_join_judged_before_anyone_gave_a_judge_is_refused():
    """RDV-3, RDV-7: a JoinMachine holds no secret; until its driver says how to judge a proof, none holds."""
    from weightsync.join import JoinMachine, JoinState
    from weightsync.messages import Join

    listener = JoinMachine(listener=True)
    assert listener.handle(Join(0, b"n" * 16, b"p" * 32)) is JoinState.ENDED and listener.refusal


def test_a_join_is_a_phase_of_the_session():
    """RDV-9: before the sender proved the secret, a joiner's session takes only the listener's messages in small
    frames; the Welcome that proves it switches the session itself to the sender's messages and WIRE-2's bound."""
    from weightsync.join import JoinMachine
    from weightsync.messages import Hello, Welcome

    session, machine = Session(wire.FROM_LISTENER, limits.MAX_BEFORE_PROOF), JoinMachine(listener=False)
    session.attach(machine)
    session.receive_data(wire.frame(Hello("1.1", b"n" * 32)), [], 0.0)
    assert isinstance(session.next_event(0.0), Message) and session.allowed == wire.FROM_LISTENER
    machine.judge = lambda msg: None  # the proof holds
    session.receive_data(wire.frame(Welcome(b"p" * 32)), [], 0.0)
    assert isinstance(session.next_event(0.0), Message)
    assert session.allowed == wire.FROM_SENDER and session._reader.max_frame == wire.MAX_TO_RECEIVER
