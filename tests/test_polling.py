"""The polls kept between calls (polling.PollSet for the sender, Channel.wait_event for a receiver) and the
short spin before either sleeps: each must see what a poll built afresh would, after the channels it watches change.
"""

from __future__ import annotations

import os
import select
import socket

import pytest

from weightsync import polling, transport, wire
from weightsync.clock import Deadline
from weightsync.messages import OK, Ack, Init, Ready, Receive, SlotInfo
from weightsync.receiving import ReceiverMachine
from weightsync.session import Message


def sender_channel() -> tuple[transport.Channel, socket.socket]:
    ours, theirs = socket.socketpair()
    return transport.Channel(ours, allowed=wire.FROM_RECEIVER, max_in=wire.MAX_TO_SENDER), theirs


def live_receiver_channel(clock=None) -> tuple[transport.Channel, socket.socket]:
    """A receiver's channel past its Init and Ready, holding version 0 in slot 0."""
    ours, theirs = socket.socketpair()
    ch = transport.Channel(ours, allowed=wire.FROM_SENDER, max_in=wire.MAX_TO_RECEIVER, takes_handles=True,
                           **({} if clock is None else {"now": clock}))
    machine = ReceiverMachine(0)
    ch.session.attach(machine)
    init = Init("1.1", 0, (), (SlotInfo(0, "cpu", 64), SlotInfo(1, "cpu", 64)), 0, 0)
    ch.session.receive_data(wire.frame(init), [-1, -1], 0.0)  # handles nothing maps: the test reads no slot
    assert isinstance(ch.session.next_event(0.0), Message)
    ch.session.send(Ready(0, 0, OK), 0.0)
    machine.accept_init(0)
    return ch, theirs


@pytest.fixture
def wake():
    r, w = os.pipe()
    os.set_blocking(r, False)
    yield r, w
    os.close(r)
    os.close(w)


def test_a_kept_poll_set_sees_the_channels_watched_now(wake):
    """A channel added after the set was built is polled; one no longer watched is not reported."""
    r, w = wake
    polls = polling.PollSet(r, None)
    a, peer_a = sender_channel()
    b, peer_b = sender_channel()
    polls.watch([a])
    assert polls.ready_now() == []
    peer_b.send(b"x")
    assert polls.ready_now() == []  # b is not watched yet
    polls.watch([a, b])
    assert polls.ready_now() == [b]
    polls.watch([a])
    assert polls.ready_now() == []
    os.write(w, b"x")
    assert polls.ready_now() == [None]  # the wake pipe is always watched
    for s in (peer_a, peer_b):
        s.close()
    a.close()
    b.close()


def test_a_channel_with_bytes_to_write_is_polled_for_room(wake):
    """Write interest is part of what the set is kept for: a channel that queued bytes comes back when writable,
    and one that emptied its queue no longer does."""
    r, _ = wake
    polls = polling.PollSet(r, None)
    ch, peer = sender_channel()
    polls.watch([ch])
    assert polls.wait(0) == []
    ch._out.append((memoryview(b"queued"), []))  # as send() leaves a frame the socket did not take
    ch.wants_write = True
    polls.watch([ch])
    assert polls.wait(0) == [ch]
    assert ch.flush() and not ch.wants_write  # the queue went out: nothing waits to be written
    polls.watch([ch])
    assert polls.wait(0) == []
    peer.close()
    assert polls.ready_now() == [ch] and ch.hup  # the end of file, announced to fill()
    ch.close()


class Counting:
    """A poll that records each call's timeout."""

    calls: list[int] = []

    def __init__(self):
        self.inner = REAL_POLL()

    def register(self, fd, events):
        self.inner.register(fd, events)

    def poll(self, millis):
        Counting.calls.append(millis)
        return self.inner.poll(millis)


REAL_POLL = select.poll


@pytest.fixture
def counted(monkeypatch):
    """Polls counted, SPIN_POLLS at 5, and each yield of the core counted as a -1 between them."""
    calls: list[int] = []
    monkeypatch.setattr(Counting, "calls", calls)
    monkeypatch.setattr(select, "poll", Counting)
    monkeypatch.setattr(polling.limits, "SPIN_POLLS", 5)
    monkeypatch.setattr(polling.os, "sched_yield", lambda: calls.append(-1))
    return calls


def test_a_sender_wait_spins_yielding_the_core_then_sleeps_and_stops_at_the_first_event(wake, counted):
    """Up to SPIN_POLLS polls that do not sleep, the core yielded after each, then one that does."""
    r, _ = wake
    channels = [sender_channel() for _ in range(3)]
    polls = polling.PollSet(r, None)
    polls.watch([ch for ch, _ in channels])
    assert polls.wait(0) == []  # a wait that may not wait does not spin
    assert counted == [0]
    counted.clear()
    channels[1][1].send(b"x")
    assert polls.wait(1000) == [channels[1][0]]
    assert counted == [0]  # the first spin saw it: no sleep, no yield
    counted.clear()
    channels[1][0].sock.recv(1)
    assert polls.wait(1) == []
    assert counted == [0, -1] * 5 + [1]
    for ch, peer in channels:
        peer.close()
        ch.close()


def test_a_spin_that_found_nothing_rests_for_the_next_waits(wake, counted, monkeypatch):
    """After a spin with no event the next SPIN_REST waits that may sleep sleep at once (waits that may not do not
    count); then a wait spins again, and a spin that finds its event keeps the next one spinning."""
    monkeypatch.setattr(polling.limits, "SPIN_REST", 2)
    r, _ = wake
    ch, peer = sender_channel()
    polls = polling.PollSet(r, None)
    polls.watch([ch])
    spun = [0, -1] * 5 + [1]
    assert polls.wait(1) == [] and counted == spun
    counted.clear()
    assert polls.wait(0) == [] and polls.wait(1) == [] and polls.wait(1) == []
    assert counted == [0, 1, 1]  # resting: no spin, no yield
    counted.clear()
    peer.send(b"x")
    assert polls.wait(1000) == [ch] and counted == [0]  # spinning again: it found the byte
    ch.sock.recv(1)
    counted.clear()
    peer.send(b"y")
    assert polls.wait(1000) == [ch] and counted == [0]  # still spinning
    peer.close()
    ch.close()


def test_a_receiver_wait_spins_before_it_sleeps_and_not_once_a_message_is_there(counted):
    """Channel.wait_event spins as the sender's wait does: a receiver woken from sleep is late by as much."""
    ch, theirs = live_receiver_channel()
    try:
        theirs.sendall(wire.frame(Receive(2, 1, ())))
        event = ch.wait_event(Deadline(5.0))
        assert isinstance(event, Message) and event.msg == Receive(2, 1, ())
        assert counted == [0]  # the first poll saw it: no yield, no sleep
        counted.clear()
        assert ch.wait_event(Deadline(0.001)) is None
        assert counted[:10] == [0, -1] * 5 and counted[10] > 0 and set(counted[11:]) <= {0, -1}
    finally:
        theirs.close()
        ch.close()


def test_a_receiver_wait_keeps_its_poll_per_wake_descriptor(wake):
    """Channel.wait_event: a byte on the wake descriptor of this wait ends it, after a wait with another one."""
    r, w = wake
    ch, theirs = live_receiver_channel()
    r2, w2 = os.pipe()
    try:
        assert ch.wait_event(Deadline(0.01), r2) is None  # nothing came: the deadline passed
        os.write(w, b"x")
        assert ch.wait_event(Deadline(5.0), r) is None  # woken by this wait's descriptor, not the last one's
        theirs.sendall(wire.frame(Receive(2, 1, ())))
        event = ch.wait_event(Deadline(5.0))
        assert isinstance(event, Message) and event.msg == Receive(2, 1, ())
    finally:
        os.close(r2)
        os.close(w2)
        theirs.close()
        ch.close()


def test_an_answer_the_socket_takes_at_once_needs_no_clock():
    """send_bounded(msg, seconds) starts a deadline only for bytes the socket did not take."""
    reads: list[int] = []

    def clock() -> float:
        reads.append(1)
        return 0.0

    ch, theirs = live_receiver_channel(clock)
    theirs.sendall(wire.frame(Receive(3, 1, ())))
    assert isinstance(ch.wait_event(Deadline(5.0)), Message)
    reads.clear()
    assert ch.send_bounded(Ack(0, 3, OK, ""), 5.0)
    assert reads == []
    assert theirs.recv(1024) == wire.frame(Ack(0, 3, OK, ""))
    theirs.close()
    ch.close()


def test_a_spin_on_a_busy_machine_ends_within_its_time_and_the_wait_within_its_own(monkeypatch):
    """Found beside eight busy processes: each yield of the core gave it away for milliseconds, so 400 of them
    took seconds, and a sender waiting 0.2 s for its next Heartbeat (NET-4) sent none before the lease ran out.
    The spin is bounded in time, and a wait of `millis` ends within about that, however slow each yield."""
    import time

    monkeypatch.setattr(polling.os, "sched_yield", lambda: time.sleep(0.005))  # a loaded core: 5 ms a yield
    r, w = os.pipe()
    try:
        poller = select.poll()
        poller.register(r, select.POLLIN)
        spin = polling.Spin()
        t0 = time.monotonic()
        assert spin.poll(poller, 50) == []
        took = time.monotonic() - t0
        assert took < 0.05 + 0.1, f"a wait of 50 ms took {took * 1000:.0f} ms (400 yields of 5 ms: 2 s)"
        os.write(w, b"x")
        assert spin.poll(poller, -1) != []  # an event ends a wait with no bound, spin or not
    finally:
        os.close(r)
        os.close(w)
