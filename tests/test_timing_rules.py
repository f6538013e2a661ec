"""The protocol's timing rules on a fake clock: WIRE-7's frame bound, NET-4's lease and heartbeat,
SEND-7's window, deadlines, and the network times a caller may choose (API-10).

Each rule lives in the core (timers.py, limits.py, clock.py) and takes the time as an
argument, so these run in milliseconds what would take seconds of real waiting.
"""

from __future__ import annotations

import socket

import pytest

from weightsync import limits, timers, transport, wire
from weightsync.clock import Deadline, FakeClock, millis
from weightsync.errors import RemoteProtocolError
from weightsync.messages import Heartbeat, Stop
from weightsync.receiving import ReceiverMachine


def test_a_frame_is_overdue_only_after_the_frame_bound():
    """WIRE-7: a frame started at t may take up to the bound; one moment more is a violation."""
    timer = timers.FrameTimer()
    assert timer.bound == limits.FRAME_BOUND == limits.REACTION_BOUND
    timer.update(True, 100.0)
    timer.update(True, 105.0)  # more bytes of the same frame do not restart the clock
    assert timer.since == 100.0
    assert not timer.overdue(100.0 + limits.FRAME_BOUND)
    assert timer.left(104.0) == pytest.approx(limits.FRAME_BOUND - 4)
    assert timer.overdue(100.0 + limits.FRAME_BOUND + 0.001)
    error = timer.violation("live")
    assert error.requirement == "WIRE-7" and error.state == "live" and error.event == "recv frame"
    timer.update(False, 200.0)  # the frame ended: no frame in progress, no timer
    assert timer.since is None and timer.left(200.0) is None and not timer.overdue(1e9)


@pytest.fixture
def clocked():
    """A receiver's channel on a fake clock, and the socket its peer writes to."""
    clock = FakeClock()
    a, b = socket.socketpair()
    ch = transport.Channel(a, allowed=wire.FROM_SENDER, max_in=wire.MAX_TO_RECEIVER, now=clock)
    yield ch, b, clock
    ch.close()
    b.close()


def test_a_channel_cuts_off_a_frame_left_unfinished_on_its_clock(clocked):
    """WIRE-7 through a real channel whose clock is fake: the bound counts from the frame's first byte."""
    ch, peer, clock = clocked
    peer.sendall(wire.frame(Stop())[:-1])
    ch.fill()
    assert ch.next() is None and ch.partial_since == clock()
    clock.advance(limits.FRAME_BOUND / 2)
    assert not ch.overdue() and ch.frame_timer() == pytest.approx(limits.FRAME_BOUND / 2)
    clock.advance(limits.FRAME_BOUND / 2)
    assert not ch.overdue()  # exactly the bound is still in time
    clock.advance(0.001)
    assert ch.overdue()
    ch.session.attach(ReceiverMachine(0))
    with pytest.raises(RemoteProtocolError) as e:
        ch.wait_event(Deadline(0, clock))  # the one pump judges it, whatever the caller's deadline
    assert e.value.requirement == "WIRE-7"


def test_a_finished_frame_stops_the_frame_clock(clocked):
    ch, peer, clock = clocked
    payload = wire.frame(Heartbeat())
    peer.sendall(payload[:2])
    ch.fill()
    clock.advance(limits.FRAME_BOUND - 1)
    peer.sendall(payload[2:])
    ch.fill()
    msg, fds = ch.next()
    assert msg == Heartbeat() and fds == []
    clock.advance(limits.FRAME_BOUND)
    assert not ch.overdue() and ch.frame_timer() is None


def test_liveness_says_heartbeat_then_expires():
    """NET-4: Heartbeat after `heartbeat` seconds of our silence; the channel ends after `lease` of the peer's."""
    live = timers.Liveness(0.0, lease=5.0, heartbeat=1.0)
    assert live.due(0.5) is None and live.left(0.5) == pytest.approx(0.5)
    assert live.due(1.0) == timers.Liveness.HEARTBEAT_DUE
    live.speak(1.0)
    assert live.due(1.5) is None
    assert live.due(5.0) == timers.Liveness.HEARTBEAT_DUE  # not expired at exactly the lease
    live.speak(5.0)
    assert live.due(5.001) == timers.Liveness.EXPIRED  # heard nothing for longer than the lease
    live.hear(5.5)  # any frame counts, Heartbeat included (MSG-4)
    assert live.due(5.6) is None
    assert live.left(5.6) == pytest.approx(0.4)  # the next heartbeat, sooner than the lease
    assert "lease expired" in live.expiry() and "NET-4" in live.expiry()


def test_a_receiver_speaks_well_within_a_short_lease():
    """NET-4: a receiver's heartbeat is at most a fifth of the sender's lease."""
    assert limits.receiver_heartbeat(limits.LEASE) == limits.HEARTBEAT
    assert limits.receiver_heartbeat(2.0) == pytest.approx(0.4)


def test_the_settle_window_opens_at_the_first_failure_only():
    """SEND-7: the window is one second from the first failure; later failures do not extend it."""
    window = timers.SettleWindow()
    assert window.closes is None and not window.over(1e9)
    window.failed(10.0)
    window.failed(10.7)
    assert window.closes == 10.0 + limits.SETTLE_WINDOW
    assert not window.over(10.0 + limits.SETTLE_WINDOW - 0.001)
    assert window.over(10.0 + limits.SETTLE_WINDOW)


def test_a_deadline_on_a_fake_clock():
    clock = FakeClock(50.0)
    d = Deadline(2.0, clock)
    assert d.left() == 2.0 and not d.expired() and d.cap(0.5) == 0.5
    clock.advance(1.5)
    assert d.left() == pytest.approx(0.5) and d.cap(3.0) == pytest.approx(0.5)
    assert d.earlier(clock() + 0.1).at == pytest.approx(clock() + 0.1)
    assert d.earlier(clock() + 10).at == d.at and d.earlier(None) is d
    clock.advance(0.5)
    assert d.expired() and d.left() == 0.0
    forever = Deadline(None, clock)
    assert forever.left() is None and not forever.expired() and forever.cap(7.0) == 7.0
    assert forever.earlier(60.0).at == 60.0 and Deadline.until(None, clock).at is None
    with pytest.raises(ValueError):
        Deadline(-1, clock)
    with pytest.raises(ValueError):
        Deadline(float("nan"), clock)
    assert millis(None) == -1 and millis(0.0011) == 2 and millis(-3) == 0


def test_a_deadline_counts_from_any_clock_reading():
    """A clock that reads 1.0 (not a large monotonic value) and one read well past the deadline."""
    clock = FakeClock(1.0)
    d = Deadline(5.0, clock)
    assert d.left() == 5.0 and not d.expired()
    clock.advance(4.0)
    assert d.left() == 1.0 and not d.expired()
    clock.advance(30.0)
    assert d.expired() and d.left() == 0.0


@pytest.mark.parametrize("kwargs", [
    {"lease": 0}, {"lease": -1.0}, {"lease": float("inf")}, {"lease": float("nan")}, {"heartbeat": 0},
    {"transfer_timeout": 0}, {"lease": True}, {"lease": "5"}, {"lease": 2.0, "heartbeat": 2.0},
    {"lease": 1.0, "heartbeat": 3.0},
])
def test_network_times_a_caller_may_not_choose(kwargs):
    """API-10: each time is a finite number > 0, and the heartbeat is shorter than the lease."""
    with pytest.raises(ValueError, match="API-10"):
        limits.network_times(**kwargs)


def test_network_times_a_caller_may_choose():
    assert limits.network_times() == (limits.LEASE, limits.HEARTBEAT, limits.TRANSFER_TIMEOUT)
    assert limits.network_times(lease=30, heartbeat=2.5, transfer_timeout=600) == (30.0, 2.5, 600.0)


def test_the_numbers_the_spec_names():
    """The normative numbers, once each, as spec/README.md and sections 12-15 state them."""
    assert (limits.REACTION_BOUND, limits.GRACE) == (10.0, 3.0)
    assert (limits.MAX_TO_SENDER, limits.MAX_TO_RECEIVER) == (64 * 1024, 64 * 1024 * 1024)
    assert wire.LENGTH.size == limits.LENGTH_BYTES
    assert (limits.MAX_DETAIL, limits.MAX_TEXT, limits.MAX_DIMS, limits.MAX_IPC) == (4096, 4096, 64, 16)
    assert limits.INT_MAX == 2**63 - 1
    assert (limits.JOIN_BOUND, limits.MAX_PENDING_JOINS, limits.NONCE_BYTES) == (10.0, 64, 32)
    assert (limits.SETTLE_WINDOW, limits.OUTBOX_LIMIT) == (1.0, 1 << 20)
    assert limits.CLOSE_WAIT < limits.REACTION_BOUND


# ---- the times a caller chose reach the wire and the lease (API-10, NET-1, NET-4) ----


def test_chosen_times_are_announced_and_the_chosen_lease_is_kept():
    """API-10: lease and transfer timeout reach Init's data_plane; a receiver silent past the chosen
    lease (heartbeats every 0.2 s to it) is named gone with "lease expired" (NET-4), before the default (5 s)."""
    import time

    import torch

    import weightsync as ws
    from conformance.peers import Joiner, PeerClosed, ready
    from conformance.verdict import HarnessError

    with ws.Sender({"w": torch.zeros(4)}, 1, listen="tcp://127.0.0.1:0", lease=2.0, heartbeat=0.2,
                   transfer_timeout=7.5) as sender:
        joiner = Joiner(sender.url(0))  # the suite's scripted joiner (RDV-3)
        try:
            assert joiner.join().get("type") == "Welcome"
            init = joiner.handshake(answer=False)
            assert init["data_plane"]["lease_ms"] == 2000 and init["data_plane"]["timeout_ms"] == 7500
            joiner.send({**ready(0, init["version"]), "capabilities": ["network"]})
            sender.connect(timeout=10, workers=[0])
            t0 = time.monotonic()
            with pytest.raises(ws.ReceiverDiedError, match="lease expired"):
                sender.send(timeout=10)
            assert time.monotonic() - t0 < limits.LEASE, "named only after the default lease, not the chosen one"
            kinds = []
            try:  # what the sender wrote before it closed the channel
                while True:
                    kinds.append(joiner.recv(5)[0]["type"])
            except (PeerClosed, ConnectionResetError, HarnessError):
                pass
            assert "Heartbeat" in kinds, f"the sender did not speak while the receiver was silent: {kinds}"
        finally:
            joiner.close()


def test_a_sender_refuses_times_it_cannot_keep():
    import torch

    import weightsync as ws

    with pytest.raises(ValueError, match="API-10"):
        ws.Sender({"w": torch.zeros(2)}, 1, lease=1.0, heartbeat=1.0)


def test_heartbeats_are_budgeted_per_channel():
    """SEC-8: a burst of 64 Heartbeats passes, the 65th at the same instant is a violation; the budget refills
    at 64 a second, so one a second (NET-4's pace) never runs out."""
    from weightsync.errors import RemoteProtocolError
    from weightsync.timers import HeartbeatBudget

    budget = HeartbeatBudget(0.0)
    for _ in range(64):
        budget.spend(0.0)
    with pytest.raises(RemoteProtocolError, match="SEC-8"):
        budget.spend(0.0)
    budget = HeartbeatBudget(0.0)
    for _ in range(64):
        budget.spend(0.0)
    budget.spend(1 / 64 + 1e-9)  # refilled by one
    steady = HeartbeatBudget(0.0)
    for second in range(1000):
        steady.spend(float(second))


def test_one_fill_reads_frames_on_both_sides_of_handles_and_keeps_none_of_its_buffer():
    """WIRE-4 through a real channel: bytes before, with and after a handle arrive in one fill(), handles in
    order; the bytes a fill reads into are reused, so what the session holds must be its own copy."""
    import array
    import os

    from weightsync.messages import Receive, SlotInfo

    a, b = socket.socketpair()
    ch = transport.Channel(a, allowed=wire.FROM_SENDER, max_in=wire.MAX_TO_RECEIVER, takes_handles=True)
    r, w = os.pipe()
    try:
        slot = SlotInfo(1, "cpu", 64)
        b.sendall(wire.frame(Heartbeat()))
        b.sendmsg([wire.frame(Receive(3, 1, (slot,)))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r]))])
        b.sendall(wire.frame(Receive(4, 1, ())) + wire.frame(Stop())[:2])
        ch.fill()
        got = []
        while (item := ch.next()) is not None:
            got.append(item)
        assert [m for m, _ in got] == [Heartbeat(), Receive(3, 1, (slot,)), Receive(4, 1, ())]
        assert [len(fds) for _, fds in got] == [0, 1, 0]
        b.sendall(wire.frame(Stop())[2:])
        ch.fill()  # reads into the same bytes the first fill read into
        assert ch.next() == (Stop(), [])
        os.close(got[1][1][0])
    finally:
        ch.close()
        b.close()
        os.close(r)
        os.close(w)


# ---- the drivers on one injected clock (clock=): a lease, a join bound and a settle window in milliseconds ----


def _live_joiner(sender):
    """The suite's scripted joiner, joined and live over TCP, silent from then on (no Heartbeat)."""
    from conformance.peers import Joiner, ready

    joiner = Joiner(sender.url(0))
    assert joiner.join().get("type") == "Welcome"
    init = joiner.handshake(answer=False)
    joiner.send({**ready(0, init["version"]), "capabilities": ["network"]})
    sender.connect(timeout=10, workers=[0])
    return joiner


def test_a_sender_reads_the_lease_off_its_clock():
    """NET-4 on the sender's injected clock: a silent receiver is named gone once the clock passed the default
    5 s lease, at the next call, after milliseconds of real time; before the jump, the same call finds it live."""
    import time

    import torch

    import weightsync as ws
    from weightsync.clock import ShiftedClock

    clock = ShiftedClock()
    with ws.Sender({"w": torch.zeros(4)}, 1, listen="tcp://127.0.0.1:0", clock=clock) as sender:
        joiner = _live_joiner(sender)
        try:
            assert sender.send_async(timeout=5).version == 1  # live: published, no error
            clock.advance(limits.LEASE + 0.5)
            t0 = time.monotonic()
            with pytest.raises(ws.ReceiverDiedError, match="lease expired"):
                sender.send(timeout=5)
            assert time.monotonic() - t0 < 4.0, "the lease was read off the real clock, not the sender's"
        finally:
            joiner.close()


def test_a_listener_reads_the_join_bound_off_its_clock():
    """RDV-6 on the sender's injected clock: a connection that sends no Join is closed once the clock passed
    the 10 s join bound, by the next call that looks at the listener, in milliseconds of real time."""

    import torch

    import weightsync as ws
    from conformance.peers import Joiner
    from weightsync.clock import ShiftedClock

    clock = ShiftedClock()
    with ws.Sender({"w": torch.zeros(4)}, 1, listen="tcp://127.0.0.1:0", clock=clock) as sender:
        idle = Joiner(sender.url(0))  # read Hello, and says nothing
        try:
            with pytest.raises(ws.SyncTimeoutError):
                sender.connect(timeout=0.05)  # the join is under way, within its bound: left alone
            assert not idle.closed_by_peer(0.05)
            clock.advance(limits.JOIN_BOUND + 0.5)
            with pytest.raises(ws.SyncTimeoutError):
                sender.connect(timeout=0.05)
            assert idle.closed_by_peer(2.0), "the join outlived its bound on the sender's clock"
        finally:
            idle.close()


def test_a_wait_reads_the_settle_window_off_the_senders_clock():
    """SEND-7 on the sender's injected clock: with one target failed and one silent, wait(0) inside the settle
    window names the silent one timed out; once the clock passed the window, the same wait names the failure
    alone, at once."""
    import threading

    import torch

    import weightsync as ws
    from conformance.peers import ScriptedReceiver, ack
    from weightsync.clock import ShiftedClock

    clock = ShiftedClock()
    with ws.Sender({"w": torch.zeros(4)}, 2, clock=clock) as sender:
        peers = [ScriptedReceiver(sender.handle(i), i) for i in range(2)]
        try:
            shakes = [threading.Thread(target=p.handshake, kwargs={"bound": 10}) for p in peers]
            for t in shakes:
                t.start()
            sender.connect(timeout=10)
            for t in shakes:
                t.join(10)
            future = sender.send_async(timeout=5)
            for p in peers:
                p.next_receive(5)
            peers[0].send(ack(0, future.version, "error", "refused on purpose"))
            with pytest.raises(ws.SyncTimeoutError) as inside:
                future.wait(0)
            assert inside.value.causes == {0: "error", 1: "timeout"}
            clock.advance(limits.SETTLE_WINDOW + 0.1)
            with pytest.raises(ws.ReceiverError) as after:
                future.wait(0)
            assert after.value.causes == {0: "error"}, "the window closed on the sender's clock names failures only"
        finally:
            for p in peers:
                p.close()
