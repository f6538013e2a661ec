"""The listening sender's helper thread (helper.py): it keeps a network receiver's lease alive
while no call runs (NET-4), whatever a caller changed while it slept.

The race it must survive: the thread takes its snapshot while no network receiver is active (so it
has no heartbeat to time), and before it polls, a caller's connect() completes a join. The thread
is parked at that moment here, deterministically, by a poll() that waits for the test.
"""

from __future__ import annotations

import select
import threading

import pytest
import torch

import weightsync as ws
from conformance.peers import Joiner, ready
from conformance.verdict import HarnessError

pytestmark = pytest.mark.timeout(60)


class _ParkedPoll:
    """select.poll() whose first poll in the listener thread waits until `release` is set."""

    def __init__(self, real, parked: threading.Event, release: threading.Event):
        self._real, self._parked, self._release = real, parked, release

    def register(self, *args):
        return self._real.register(*args)

    def poll(self, timeout=None):
        if threading.current_thread().name == "weightsync-listener" and not self._parked.is_set():
            self._parked.set()
            self._release.wait(20)
        return self._real.poll(timeout)


def test_a_join_completed_while_the_listener_sleeps_still_gets_heartbeats(monkeypatch):
    real_poll = select.poll
    parked, release = threading.Event(), threading.Event()
    monkeypatch.setattr(select, "poll", lambda: _ParkedPoll(real_poll(), parked, release))
    with ws.Sender({"w": torch.zeros(16)}, 1, listen="tcp://127.0.0.1:0") as sender:
        assert parked.wait(10), "the listener thread never polled"
        # The caller's connect() answers the join (Hello, Welcome, Init, Ready) while the listener sleeps.
        connecting = threading.Thread(target=sender.connect, args=(10,), kwargs={"workers": [0]}, daemon=True)
        connecting.start()
        joiner = Joiner(sender.url(0))
        try:
            assert joiner.join().get("type") == "Welcome"
            init = joiner.handshake(answer=False)
            joiner.send(ready(0, init["version"]))
            connecting.join(10)
            assert not connecting.is_alive(), "connect() did not return"
            release.set()
            kinds = []
            while "Heartbeat" not in kinds:  # "still here" at least every second (NET-4), with no call running
                try:
                    msg, _ = joiner.recv(3.0)
                except HarnessError:
                    pytest.fail(f"no Heartbeat within 3 s of connect() while no call ran; frames: {kinds}")
                kinds.append(msg.get("type"))
        finally:
            release.set()
            joiner.close()


def test_a_release_without_close_leaves_the_listener_nothing_to_trip_on(monkeypatch):
    """What interpreter exit runs (the sender's finalizer), and TorchRL's release() at exit, frees the listener
    and the channels without close(). The helper thread, woken by a hang-up just before, must then end
    quietly: it once went on to poll the closed listener (descriptor -1) and died with ValueError, printed
    over the trainer's exit. The helper is parked right after its wake-up, deterministically, by a poll()
    that holds its events until the test lets it go."""
    errors: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    armed, woke, go = threading.Event(), threading.Event(), threading.Event()
    real_poll = select.poll

    class _Held:
        def __init__(self):
            self._real = real_poll()

        def register(self, *args):
            return self._real.register(*args)

        def poll(self, timeout=None):
            events = self._real.poll(timeout)
            if events and armed.is_set() and threading.current_thread().name == "weightsync-listener":
                woke.set()
                go.wait(20)
            return events

    monkeypatch.setattr(select, "poll", _Held)
    sender = ws.Sender({"w": torch.zeros(4)}, 1, listen="unix:@weightsync-test-release-race")
    receiver = ws.Receiver(sender.url(0))
    connecting = threading.Thread(target=receiver.connect, args=(10,), daemon=True)
    connecting.start()
    sender.connect(10)
    connecting.join(10)
    sender.send(timeout=10)
    armed.set()
    try:
        receiver.close()  # a hang-up: the helper wakes and is held with its events
        assert woke.wait(10), "the helper thread did not wake for the hang-up"
        sender._hub.finalizer()  # resources go without close(), as at exit
    finally:
        go.set()
    sender._hub.helper.join(5)
    assert not sender._hub.helper.is_alive() and not errors, errors


@pytest.mark.processes
def test_a_helper_closing_its_sender_at_interpreter_exit_does_not_abort_the_process():
    """The helper thread closes a sender whose receivers are all gone (weightsync.torchrl's) while the main
    thread returns: interpreter exit waits for it (bounded) instead of freezing it inside torch, which aborted
    the process with 'terminate called without an active exception' (the TorchRL guide's example, 1 run in
    about 30 beside load; tests/exit_race.py makes it certain)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).with_name("exit_race.py")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=50)
    assert "helper closing: True" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0 and "terminate called" not in done.stderr, (
        f"exit {done.returncode}: {done.stderr[-2000:]}")
