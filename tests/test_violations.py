"""Peers that break the protocol: a hand-driven fake on the other end of a real channel."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

import weightsync as ws
from weightsync import shm, transport, wire
from weightsync.messages import Ack, Init, Ready, Receive, SlotInfo, Stop

from . import raw

WEIGHTS = {"w": torch.arange(6.0)}


class FakeReceiver:
    """Speaks the receiver's side by hand, so a test can make it misbehave."""

    def __init__(self, handle):
        self.ch = transport.Channel(handle.conn.dup(), allowed=wire.FROM_SENDER, max_in=wire.MAX_TO_RECEIVER,
                                    takes_handles=True)
        handle.conn.close()

    def recv(self, kind):
        msg, fds = raw.recv(self.ch, transport.Deadline(5))
        transport.Channel._close_fds(fds)
        assert isinstance(msg, kind), msg
        return msg

    def handshake(self, version_delta=0):
        init = self.recv(Init)
        self.ch.send(Ready(init.receiver, init.version + version_delta, "ok"))
        return init

    def next_receive(self):
        return self.recv(Receive)


def _connect(sender, fake, **kw):
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(sender.connect, 5)
        init = fake.handshake(**kw)
        return init, fut.result(timeout=10)


@pytest.mark.parametrize("bad", ["future version", "stale version", "unknown status", "wrong receiver"])
def test_a_receiver_that_breaks_the_protocol_is_failed_and_named(bad):
    """SM-S-9, ACK-5, MSG-1, MSG-2, VER-4: the send fails naming it; the others are unaffected."""
    with ws.Sender(WEIGHTS, 2) as sender:
        fake = FakeReceiver(sender.handle(0))
        good = ws.Receiver(sender.handle(1))
        with ThreadPoolExecutor(2) as pool:
            f = pool.submit(sender.connect, 5)
            fake.handshake()
            good.connect(timeout=5)
            f.result(timeout=10)
        fut = sender.send_async()
        msg = fake.next_receive()
        ack = {
            "future version": Ack(0, msg.version + 5, "ok"),
            "stale version": Ack(0, msg.version - 1, "ok"),
            "unknown status": Ack(0, msg.version, "maybe"),
            "wrong receiver": Ack(1, msg.version, "ok"),
        }[bad]
        fake.ch.send(ack)
        with pytest.raises(ws.ReceiverError) as info:
            fut.wait(timeout=5)
        assert info.value.workers == [0] and "protocol violation" in info.value.details[0]
        assert info.value.causes == {0: "violation"}
        with pytest.raises(ws.ReceiverError):
            sender.send(timeout=5)
        assert sender.send(workers=[1], timeout=5) == 2
        restarted = ws.Receiver(sender.handle(0))
        with ThreadPoolExecutor(1) as pool:
            f = pool.submit(sender.connect, 5, workers=[0])
            assert restarted.connect(timeout=5) == 2
            f.result(timeout=10)
        assert sender.send(timeout=5) == 3
        restarted.close()
        good.close()


def test_ready_for_another_version_fails_the_handshake():
    """SM-S-9, INIT-4."""
    with ws.Sender(WEIGHTS, 1) as sender:
        fake = FakeReceiver(sender.handle(0))
        with pytest.raises(ws.ReceiverError, match="INIT-4"):
            _connect(sender, fake, version_delta=3)


class FakeSender:
    """Speaks the sender's side by hand over a real slot."""

    def __init__(self):
        ours, theirs = transport.socket_pair()
        self.ch = transport.Channel(ours, allowed=wire.FROM_RECEIVER, max_in=wire.MAX_TO_SENDER)
        self.handle = ws.Handle(0, theirs)
        self.buffer = shm.SealedBuffer(64)
        self.buffer.tensor[:24].view(torch.float32).copy_(torch.arange(6.0))
        from weightsync.layout import make_manifest

        self.manifest = make_manifest(WEIGHTS)

    def init(self, version=0, protocol="1.1"):
        self.ch.send(Init(protocol, 0, self.manifest, (SlotInfo(0, "cpu", 64),), version, 0), (self.buffer.handle,))

    def expect(self, kind):
        msg, _ = raw.recv(self.ch, transport.Deadline(5))
        assert isinstance(msg, kind), msg
        return msg


@pytest.mark.parametrize("mode", ["pull", "push"])
def test_a_sender_that_repeats_a_version_stops_the_receiver(mode):
    """VER-3, SM-R-7: ProtocolError from poll() in pull mode, `failure` in push mode."""
    fake = FakeSender()
    r = ws.Receiver(fake.handle, mode=mode)
    fake.init(version=4)
    assert r.connect(timeout=5) == 4
    fake.expect(Ready)
    fake.ch.send(Receive(4, 0))
    if mode == "pull":
        with pytest.raises(ws.RemoteProtocolError, match="VER-3"):
            r.poll(timeout=5)
    else:
        deadline = time.monotonic() + 5
        while r.failure is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert isinstance(r.failure, ws.RemoteProtocolError) and r.failure.requirement == "VER-3"
    assert r.stopped
    with pytest.raises(transport.ChannelClosed):
        raw.recv(fake.ch, transport.Deadline(5))  # the receiver cut the channel
    r.close()
    fake.ch.close()
    fake.buffer.close()


@pytest.mark.parametrize("mode", ["pull", "push"])
def test_a_receiver_cut_after_a_violation_is_stopped_before_its_channel_closes(mode, monkeypatch):
    """SM-R-7, SM-R-8: whoever sees the channel end may ask `stopped` and `failure` at once: both are set by then."""
    fake = FakeSender()
    r = ws.Receiver(fake.handle, mode=mode)
    fake.init(version=4)
    r.connect(timeout=5)
    fake.expect(Ready)
    seen = []
    close = transport.Channel.close

    def close_seen(ch):
        seen.append((r.stopped, r.failure is not None))
        close(ch)

    monkeypatch.setattr(transport.Channel, "close", close_seen)
    fake.ch.send(Receive(4, 0))  # VER-3: the receiver cuts the channel
    if mode == "pull":
        with pytest.raises(ws.RemoteProtocolError, match="VER-3"):
            r.poll(timeout=5)
    with pytest.raises(transport.ChannelClosed):
        raw.recv(fake.ch, transport.Deadline(5))
    assert seen and seen[0] == (True, True), f"the channel closed while the receiver said (stopped, failed)={seen[0]}"
    monkeypatch.undo()
    r.close()
    fake.ch.close()
    fake.buffer.close()


def test_receiver_refuses_another_protocol_major():
    """INIT-2."""
    fake = FakeSender()
    r = ws.Receiver(fake.handle)
    fake.init(protocol="2.0")
    with pytest.raises(ws.RemoteProtocolError, match="INIT-2"):
        r.connect(timeout=5)
    ready = fake.expect(Ready)
    assert ready.status == "error" and "INIT-2" in ready.detail
    r.close()


def test_receiver_stops_on_stop_before_init():
    """SM-R-3, LIFE-7."""
    fake = FakeSender()
    r = ws.Receiver(fake.handle, mode="pull")
    fake.ch.send(Stop())
    with pytest.raises(ws.ClosedError):
        r.connect(timeout=5)
    assert r.stopped
    r.close()


def test_sender_gone_between_init_and_ready_is_a_closed_error():
    """SM-R-3, LIFE-7: the Init was read, but the sender closed before Ready could go out."""
    fake = FakeSender()
    r = ws.Receiver(fake.handle, mode="pull")
    fake.init(version=2)
    fake.ch.close()  # the receiver still finds the Init in its socket buffer
    with pytest.raises(ws.ClosedError, match="handshake"):
        r.connect(timeout=5)
    assert r.stopped
    r.close()
    fake.buffer.close()
