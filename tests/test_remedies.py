"""Every error a user can fix names the call that fixes it (issue 39): the message ends with "Fix: ..."

Provoked through the public binding where that is cheap (a sender and receivers in this
process), constructed where it is not; the remedy survives pickling (a worker's error
crossing a process boundary) and the detail a receiver sends to the sender.
"""

from __future__ import annotations

import os
import pickle
import threading
import time

import pytest
import torch
from torch import nn

import weightsync as ws
from weightsync import errors

from .conftest import MANIFEST
from .workers import pattern


def fix(e: BaseException) -> str:
    """The remedy sentence of an error's message (after its last 'Fix: ')."""
    text = str(e)
    assert "Fix: " in text, f"{type(e).__name__} names no remedy: {text}"
    return text.rsplit("Fix: ", 1)[1]


def connect_in_thread(receiver):
    """receiver.connect() in a thread; returns (thread, box) where box gets its result or error."""
    box: dict = {}

    def run():
        try:
            box["version"] = receiver.connect(timeout=10)
        except ws.WeightSyncError as e:
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


def test_bf16_worker_behind_fp32_trainer_names_dtypes():
    """The worker's WeightsMismatchError and the trainer's ReceiverError both point to Sender(dtypes=)."""
    trainer = nn.Linear(4, 4)
    sender = ws.Sender(trainer, 1)
    r = ws.Receiver(sender.handle(0), nn.Linear(4, 4).bfloat16())
    try:
        t, box = connect_in_thread(r)
        with pytest.raises(ws.ReceiverError) as trainer_side:
            sender.connect(timeout=10)
        t.join(10)
        worker_side = box["error"]
        assert isinstance(worker_side, ws.WeightsMismatchError)
        assert "dtypes=torch.bfloat16" in fix(worker_side), worker_side
        assert "dtypes=torch.bfloat16" in trainer_side.value.details[0], "the remedy is lost on its way to the sender"
        assert "sender.handle(" in fix(trainer_side.value) and "connect(workers=" in fix(trainer_side.value)
    finally:
        sender.close()
        r.close()


def test_shape_mismatch_of_a_target_names_the_target_not_dtypes():
    weights = pattern(MANIFEST, 0)
    wrong = {k: torch.empty_like(v) for k, v in weights.items()}
    wrong["a.weight"] = torch.empty(4, 8)
    sender = ws.Sender(weights, 1)
    r = ws.Receiver(sender.handle(0), wrong)
    try:
        t, box = connect_in_thread(r)
        with pytest.raises(ws.ReceiverError):
            sender.connect(timeout=10)
        t.join(10)
        remedy = fix(box["error"])
        assert "target" in remedy and "dtypes=" not in remedy, remedy
    finally:
        sender.close()
        r.close()


def test_send_of_weights_unlike_the_senders_names_the_fix(local):
    weights = pattern(MANIFEST, 0)
    sender, _ = local(weights, n=1)
    bad = pattern(MANIFEST, 1)
    bad["a.weight"] = bad["a.weight"].double()
    with pytest.raises(ws.WeightsMismatchError) as info:
        sender.send(bad, timeout=5)
    assert "Sender" in fix(info.value) and "dtypes=" not in fix(info.value), info.value


def test_a_receiver_that_stops_answering_names_drop_and_timeout(local):
    """A pull receiver that never polls: send() and future.wait() time out naming sender.drop(i) and timeout=."""
    sender, (r,) = local(pattern(MANIFEST, 0), n=1, modes="pull")
    t0 = time.monotonic()
    with pytest.raises(ws.SyncTimeoutError) as info:
        sender.send(pattern(MANIFEST, 1), timeout=0.2)
    assert time.monotonic() - t0 < 5
    assert "sender.drop(" in fix(info.value) and "timeout=" in fix(info.value), info.value
    future = sender.send_async(pattern(MANIFEST, 2), timeout=5)
    with pytest.raises(ws.SyncTimeoutError) as info:
        future.wait(timeout=0.1)
    assert "sender.drop(" in fix(info.value) and "timeout=" in fix(info.value), info.value
    sender.drop(0)
    with pytest.raises(ws.ReceiverDiedError) as gone:  # the dropped one, named at once (SEND-4)
        sender.send(pattern(MANIFEST, 3), timeout=5)
    assert "sender.handle(" in fix(gone.value) and "workers=" in fix(gone.value), gone.value


def test_a_receiver_that_died_names_the_restart(local):
    sender, receivers = local(pattern(MANIFEST, 0), n=2)
    receivers[1].close()
    with pytest.raises(ws.ReceiverDiedError) as info:
        sender.send(pattern(MANIFEST, 1), timeout=10)
    remedy = fix(info.value)
    assert "sender.handle(" in remedy and "connect(workers=" in remedy, info.value


def test_a_receiver_that_reported_an_error_names_the_repair(local):
    """Ack(error) leaves the receiver live: fix its target, and the next send repairs it (ACK-7)."""
    weights = pattern(MANIFEST, 0)
    target = {k: torch.empty_like(v) for k, v in weights.items()}
    sender, (r,) = local(weights, n=1, targets=[target])
    target["a.weight"] = torch.empty(4, 8)  # no longer matches the manifest
    with pytest.raises(ws.ReceiverError) as info:
        sender.send(pattern(MANIFEST, 1), timeout=10)
    assert "send(" in fix(info.value) and "handle(" not in fix(info.value), info.value
    assert "Fix: " in info.value.details[0], "the worker's own remedy (its target) reaches the sender"


def test_a_receiver_waiting_for_an_init_names_sender_connect_not_drop():
    sender = ws.Sender(pattern(MANIFEST, 0), 1)
    r = ws.Receiver(sender.handle(0))
    try:
        with pytest.raises(ws.SyncTimeoutError) as info:
            r.connect(timeout=0.2)
        remedy = fix(info.value)
        assert "sender.connect()" in remedy and "timeout=" in remedy and "drop(" not in remedy, info.value
    finally:
        sender.close()
        r.close()


def test_a_refused_join_names_the_url_to_use():
    sender = ws.Sender(pattern(MANIFEST, 0), 1, listen=f"unix:@ws-remedies-{os.getpid()}")
    url = sender.url(0)
    r = ws.Receiver(url[: url.index("secret=") + 7] + "0" * 64)
    try:
        with pytest.raises(ws.RefusedError) as info:
            r.connect(timeout=5)
        assert "sender.url(" in fix(info.value), info.value
        assert isinstance(info.value, PermissionError)
    finally:
        r.close()
        sender.close()


def test_closed_sender_and_receiver_name_a_new_one(local):
    sender, (r,) = local(pattern(MANIFEST, 0), n=1, modes="pull")
    r.close()
    sender.close()
    with pytest.raises(ws.ClosedError) as closed_sender:
        sender.send(timeout=1)
    with pytest.raises(ws.ClosedError) as closed_receiver:
        r.poll()
    for e in (closed_sender.value, closed_receiver.value):
        assert "Sender(" in fix(e) and "Receiver(" in fix(e), e


def test_local_protocol_errors_name_the_call():
    sender = ws.Sender(pattern(MANIFEST, 0), 1)
    r = ws.Receiver(sender.handle(0), mode="pull")
    try:
        with pytest.raises(ws.LocalProtocolError) as early:
            r.poll()
        assert "connect()" in str(early.value)
        with pytest.raises(ws.LocalProtocolError) as unlistening:
            sender.url(0)
        assert "listen=" in str(unlistening.value)
    finally:
        sender.close()
        r.close()


@pytest.mark.parametrize("causes, calls", [
    ({0: errors.ANSWERED_ERROR}, ["send("]),
    ({0: errors.VIOLATION}, ["sender.handle(", "connect(workers="]),
    ({0: errors.DIED}, ["sender.handle(", "connect(workers="]),
    ({0: errors.TIMEOUT}, ["sender.drop(", "timeout="]),
    ({0: errors.ANSWERED_ERROR, 1: errors.DIED}, ["send(", "sender.handle("]),
    ({0: errors.ANSWERED_ERROR, 1: errors.TIMEOUT}, ["send(", "sender.drop(", "timeout="]),
    ({0: errors.DIED, 1: errors.TIMEOUT}, ["sender.handle(", "sender.drop(", "timeout="]),
    ({0: errors.ANSWERED_ERROR, 1: errors.DIED, 2: errors.TIMEOUT}, ["send(", "sender.handle(", "sender.drop(", "timeout="]),
])
def test_every_receiver_error_class_names_the_fix_of_each_cause(causes, calls):
    """The combined classes (SEND-7) name the remedy of every cause they carry; pickling keeps it all."""
    e = errors.receivers_error(causes, {w: "why" for w in causes}, 3)
    for call in calls:
        assert call in fix(e), (type(e).__name__, str(e))
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is type(e) and str(back) == str(e)
    assert (back.workers, back.version, back.details, back.causes) == (e.workers, e.version, e.details, e.causes)


@pytest.mark.parametrize("cls, calls", [
    (ws.SyncTimeoutError, ["sender.drop(", "timeout="]),
    (ws.ReceiverDiedError, ["sender.handle(", "connect(workers="]),
    (ws.ReceiverError, ["send("]),
])
def test_receiver_errors_built_directly_name_their_fix(cls, calls):
    e = cls([2], 1, {2: "why"})
    for call in calls:
        assert call in fix(e), str(e)


def test_a_timeout_that_names_no_receiver_names_only_timeout():
    """Another thread held the sender past the timeout (API-7): there is no i to drop."""
    e = ws.SyncTimeoutError([], None, hint="another thread held the sender past the timeout (API-7)")
    assert "timeout=" in fix(e) and "drop(" not in fix(e), str(e)


@pytest.mark.parametrize("make", [
    lambda: ws.ClosedError("the sender is closed (LIFE-6)"),
    lambda: ws.RefusedError("receiver 0: the sender at unix:@x refused the join: refused (RDV-4)"),
    lambda: ws.SyncTimeoutError([1], 4, {1: "no answer"}),
])
def test_the_remedy_survives_pickling_once(make):
    e = make()
    back = pickle.loads(pickle.dumps(e))
    assert str(back) == str(e) and str(e).count("Fix: ") == 1, str(back)


def test_a_long_detail_keeps_its_remedy_when_clipped():
    """A receiver's detail is cut to fit the wire (MAX_DETAIL): the cut keeps the remedy at its end."""
    text = "weights do not match: " + "x" * 5000 + ". Fix: build the Sender with dtypes=torch.bfloat16"
    clipped = errors.clip(text, 1024)
    assert len(clipped) <= 1024 and clipped.endswith("Fix: build the Sender with dtypes=torch.bfloat16")
    assert clipped.startswith("weights do not match: ")
    assert errors.clip("short", 1024) == "short"
