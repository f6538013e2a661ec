"""Spec section 5, versions and acks (VER-*, ACK-*), and what a send returns (SEND-1, SEND-5)."""

import time

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from . import strategies as S
from . import timing as tm
from .bounds import bounded
from .clauses import occurred
from .model import describe
from .peers import ack, frame, pack
from .rig import check_receiver_error, connect_here, expect_error, pair, refused, waited
from .verdict import HarnessError, TooSlow, in_time


def basic(seed=0):
    return S.distinct_weights(S.BASIC_SPEC, seed)


@pytest.mark.req("VER-1", "ACK-3", "SEND-1", "INIT-4", "ROLE-3")
@pytest.mark.needs("push")
def test_versions_count_up_and_bytes_arrive_exactly(rigs):
    w = basic(0)
    rig = rigs(w, 2)
    assert rig.sender.version == 0, f"VER-1 violated: a new sender's version is {rig.sender.version}, not 0"
    rig.check()
    for k in range(1, 4):
        for name, t in S.distinct_weights(S.BASIC_SPEC, k).items():
            w[name].copy_(t)
        v = rig.send()
        assert v == k, f"VER-1 violated: send #{k} returned version {v}"
        rig.check()


@pytest.mark.req("API-2", "ACK-3")
@pytest.mark.needs("push")
def test_send_with_explicit_weights(rigs):
    rig = rigs(basic(0), 1)
    rig.send(basic(7))
    rig.check()
    rig.send()  # weights=None re-reads the object the sender was built from (API-2)
    rig.check()


@pytest.mark.req("ROLE-3", "ACK-3", "VER-1")
@pytest.mark.needs("push")
@given(data=st.data())
def test_any_names_dtypes_shapes_roundtrip(rigs, data):
    spec = data.draw(S.specs(), label="spec")
    w0 = data.draw(S.weights_for(spec), label="initial")
    rig = rigs(w0, 1)
    rig.check()
    rig.send(data.draw(S.weights_for(spec), label="update"))
    rig.check()
    rig.teardown()


@pytest.mark.req("SEND-5", "ACK-2", "ACK-1", "VER-4", "CONS-3")
@pytest.mark.needs("pull")
def test_pull_newest_wins_and_answers_older(rigs):
    rig = rigs(basic(0), 1, modes=["pull"])
    f1 = rig.send_async(basic(1))
    f2 = rig.send_async(basic(2))
    assert not f1.done() and not f2.done(), "SEND-5 violated: futures report done before any ack"
    rig.check()  # pull mode: nothing applied before poll (CONS-3)
    got = rig.poll(0, tm.T)
    assert got in (1, 2), f"ACK-1 violated: poll() returned {got}, expected 1 or 2"
    if got == 1:
        rig.polled(0, 2, "ACK-1")
    rig.check()
    # ACK-2: the ack of 2 answers the Receive of 1 as well; matched by version (VER-4).
    waited(f1, "ACK-2", what="wait() on version 1 after version 2 was acked")
    waited(f2, "ACK-2")
    assert f1.done() and f2.done(), "SEND-5 violated: futures not done() after wait() returned"
    assert rig.poll(0) is None, "ACK-1 violated: poll() applied something with nothing pending"


@pytest.mark.req("SEND-5", "SEND-2", "VER-4")
@pytest.mark.needs("pull")
def test_wait_times_out_and_can_wait_again(rigs, ws):
    """wait() times out naming the pull receiver that has not polled; once it polled, wait(0) (a timeout already
    over) still reads the Ack that arrived and returns the version (SEND-5.e), as a wait with time to spare does.
    wait(0) is asked again every 50 ms, so a slow Ack is waited for; one that never counts is not."""
    rig = rigs(basic(0), 1, modes=["pull"])
    f = rig.send_async(basic(1))
    e = expect_error(ws, "SyncTimeoutError", f.wait, tm.SHORT, ids="SEND-5", what="wait() with no poll", naming=[0],
                     limit=tm.SHORT + tm.SLACK)
    assert e.version == 1, f"SEND-2 violated: SyncTimeoutError carries version {e.version}, expected 1"
    assert isinstance(e, TimeoutError), "API-4 violated: SyncTimeoutError is not a TimeoutError"
    rig.polled(0, 1, "SEND-5")
    end, last = time.monotonic() + tm.T, None
    while True:
        try:
            got = bounded(f.wait, 0, limit=tm.SLACK, what="wait(0) once the receiver polled")
            break
        except ws.SyncTimeoutError as timed_out:
            last = timed_out
        except HarnessError as e:
            raise TooSlow(f"API-7 violated: {e}") from None
        if time.monotonic() > end:
            raise TooSlow(f"SEND-5 violated: wait(0) still raised SyncTimeoutError {tm.T:.0f} s after the receiver "
                          f"polled version 1 (an Ack that arrived is read by a wait whose timeout is over): {last}")
        time.sleep(0.05)
    occurred("SEND-5.e")
    assert got == f.version, f"SEND-5 violated: wait(0) returned {got!r}, expected {f.version}"
    waited(f, "SEND-5", what="wait() after a timeout, once acked")


@pytest.mark.req("VER-4", "ACK-4", "ACK-3")
@pytest.mark.needs("push")
@pytest.mark.needs("mapping")
def test_ack_only_after_apply(rigs):
    """Applying is made slow (the target mapping pauses a second): the ack must still come after it (ACK-4)."""
    rig = rigs(basic(0), 1)
    rig.workers[0].call("fault", ("slow", 1.0 * tm.SCALE))
    v = rig.send(basic(1), timeout=tm.T)
    seen = rig.workers[0].call("peek")
    assert seen == v, f"ACK-4 violated: send returned version {v} (acked) but receiver 0 still reports version {seen}"
    rig.workers[0].call("fault", None)
    rig.check()


@pytest.mark.req("ACK-3", "VER-4", "SEND-5")
@pytest.mark.needs("push")
def test_async_sends_settle_in_order(rigs):
    rig = rigs(basic(0), 2)
    futures = [rig.send_async(basic(k)) for k in range(1, 5)]
    for f in futures:
        waited(f, "SEND-5")
    for i in range(2):
        rig.model.acked(i, futures[-1].version)
    rig.check()


@pytest.mark.req("SLOT-1", "SLOT-3", "VER-2", "SEND-2")
@pytest.mark.needs("pull")
def test_bounded_slots_time_out_without_publishing(rigs, ws):
    rig = rigs(basic(0), 1, modes=["pull"], max_slots=2)
    rig.send_async(basic(1))
    rig.send_async(basic(2))  # two slots: the one of version 0 is free again (SLOT-1)
    e = expect_error(ws, "SyncTimeoutError", rig.sender.send_async, basic(3), timeout=tm.SHORT, ids="SLOT-3",
                     what="send_async with every slot in use", limit=tm.SHORT + tm.SLACK)
    assert 0 in e.workers, f"SLOT-3 violated: the timeout names {e.workers}, not receiver 0 that holds the slots"
    assert e.version is None, f"SLOT-3 violated: a send that published nothing raised with version {e.version}, not None"
    assert rig.sender.version == 2, f"VER-2 violated: a send that timed out waiting for a slot left version {rig.sender.version}"
    got = rig.poll(0, tm.T)
    assert got in (1, 2), f"ACK-2 violated: poll() gave {got}; versions 1 and 2 were pending"
    while rig.poll(0) is not None:
        pass
    rig.send_async(basic(3), timeout=tm.T)
    rig.polled(0, 3, "SLOT-3")
    rig.check()


@pytest.mark.req("VER-1")
def test_version_is_int(rigs):
    rig = rigs(basic(0), 1, connect=False)
    assert type(rig.sender.version) is int and rig.sender.version == 0, "VER-1 violated: version 0 is not the int 0"


@pytest.mark.req("SLOT-3")
@pytest.mark.needs("pull", "push")
def test_slot_timeout_names_only_the_receivers_that_hold_slots(rigs, ws):
    """Receiver 1 holds a slot with an unanswered Receive; receiver 0, the target, holds none."""
    rig = rigs(basic(0), 2, modes=["push", "pull"], max_slots=2)
    rig.send_async(basic(1), workers=[1])
    rig.send(basic(2), workers=[0])
    e = expect_error(ws, "SyncTimeoutError", rig.sender.send_async, basic(3), workers=[0], timeout=tm.SHORT,
                     ids="SLOT-3", what="send_async to receiver 0 while receiver 1 holds the other slot",
                     limit=tm.SHORT + tm.SLACK, naming=[1])
    assert e.version is None, f"SLOT-3 violated: a send that published nothing raised with version {e.version}"
    rig.polled(1, 1, "ACK-1")
    rig.check()


@pytest.mark.req("SLOT-3", "LAYOUT-3", "VER-2")
@pytest.mark.needs("pull", "push", "cast")
def test_a_full_slot_group_names_only_its_own_receivers(rigs, ws):
    """Two slot groups (LAYOUT-3: receiver 1's slots are cast to bfloat16), max_slots=3 for each (SLOT-3
    counts per slot device, and a send does not wait while its device holds fewer). Receiver 0 (pull, never polling) pins every slot of its group; receiver 1 (push,
    zero-copy where declared, so it holds a slot of the other group) acks each version. The send that finds
    receiver 0's group full waits its timeout, then fails naming receiver 0 alone, with .version None and
    nothing published; receiver 1 keeps its version, and once receiver 0 polls, the next send reaches both."""
    zero_copy = "zero_copy" in ws.CAPABILITIES
    rig = rigs(basic(0), 2, modes=["pull", "push"], targets=["mapping", None], zero_copy=[False, zero_copy],
               connect=False)
    rig.sender.close()
    rig.sender = ws.Sender(rig.weights, 2, max_slots=3, dtypes=[None, torch.bfloat16])
    rig.connect([0, 1])
    w1 = rig.workers[1]

    def receiver_1_holds(v: int, when: str) -> None:
        want = describe({n: t.to(torch.bfloat16) if t.is_floating_point() else t for n, t in basic(v).items()})
        got, d = w1.call("snapshot")
        assert got == v and d == want, (f"SLOT-3 violated: {when}, receiver 1 (the other slot group) shows version "
                                        f"{got}{'' if d == want else ' with other bytes'}; expected {v}, cast")

    def applied_by_1(v: int) -> None:
        deadline = time.monotonic() + tm.T
        while (seen := w1.call("peek")) != v:
            in_time(time.monotonic() < deadline, f"ACK-1 violated: push receiver 1 shows version {seen}, not {v}, "
                                                 f"{tm.T:.0f} s after it was sent")
            time.sleep(0.02)

    for k in (1, 2):  # receiver 0's group: the two slots of SLOT-1, both now named by unanswered Receives
        rig.send_async(basic(k))
        applied_by_1(k)
    k = 3
    while True:  # the third slot is within max_slots=3 of that device (SLOT-3: it must not wait); a fourth is past
        try:
            f = bounded(rig.sender.send_async, basic(k), timeout=tm.SHORT, limit=tm.SHORT + tm.SLACK,
                        what=f"send_async of {k}")
        except ws.SyncTimeoutError as e:
            assert k > 3, ("SLOT-3 violated: send_async of 3 waited for a slot and timed out while receiver 0's "
                           "slot device held 2 slots, under max_slots=3 (the bound counts per slot device, not "
                           "the 4 slots of both groups)")
            occurred("SLOT-3.b")  # one group full, the other with room
            check_receiver_error(ws, e, f"send_async of {k}")
            assert e.workers == [0], (f"SLOT-3 violated: with receiver 0's slot group full and receiver 1's not, the "
                                      f"timeout names {e.workers}; only the receivers holding slots of the full group "
                                      "belong in it")
            assert e.version is None, f"SLOT-3 violated: a send that published nothing raised with version {e.version}"
            break
        except HarnessError as e:
            raise TooSlow(f"SLOT-3 violated: {e}") from None
        assert k == 3, (f"SLOT-3 violated: send_async of {k} published version {f.version} with every slot of "
                        "receiver 0's group (max_slots=3) named by its unanswered Receives")
        assert f.version == k, f"VER-1 violated: send_async published version {f.version}, expected {k}"
        rig.model.publish(describe(basic(k)), [0, 1])
        applied_by_1(k)
        k += 1
    assert rig.sender.version == k - 1, f"VER-2 violated: a send that found no slot left version {rig.sender.version}"
    receiver_1_holds(k - 1, f"after the send of {k} found no slot in the other group")
    rig.polled(0, k - 1, "SLOT-3")  # receiver 0 answers every version: its group's slots are free again
    f = rig.send_async(basic(k))
    rig.polled(0, k, "SLOT-3")
    waited(f, "SEND-5")
    receiver_1_holds(k, "once receiver 0 freed its slots")
    rig.check([0])


@pytest.mark.req("ACK-3")
@pytest.mark.needs("push")
@pytest.mark.parametrize("target", [None, pytest.param("mapping", marks=pytest.mark.needs("mapping"))])
def test_values_that_compare_equal_are_still_sent_bit_for_bit(rigs, target):
    """+0.0 then -0.0, and one NaN then another: equal (or unordered) as numbers, other bits. A receiver
    that skips a copy because the values compare equal does not hold what was published (ACK-3)."""
    spec = [("f", torch.float32, (3,)), ("h", torch.bfloat16, (2,)), ("d", torch.float64, ())]

    def filled(bits: dict) -> dict:
        return {n: torch.tensor(bits[n], dtype={"f": torch.int32, "h": torch.int16, "d": torch.int64}[n]).view(d)
                .reshape(s).clone() for n, d, s in spec}

    pos = filled({"f": [0, 0, 0x7FC00000], "h": [0, 0x7FC0], "d": 0})
    neg = filled({"f": [-0x80000000, 0, 0x7FC00001], "h": [-0x8000, 0x7FC1], "d": -0x8000000000000000})
    rig = rigs(pos, 1, targets=target)
    for w in (neg, pos, neg):
        rig.send(w)
        rig.check()


@pytest.mark.req("API-3", "CONS-3")
@pytest.mark.needs("pull")
def test_poll_none_waits_for_the_next_version(rigs):
    """poll(None) waits without bound: started before anything is sent, it returns the version sent
    after it (API-3), applied in that poll (CONS-3)."""
    rig = rigs(basic(0), 1, modes=["pull"])
    w = rig.workers[0]
    w.submit("poll", None)
    f = rig.send_async(basic(1))
    try:
        status, v = w.result(tm.T + tm.BOUND)
    except HarnessError as e:
        raise TooSlow(f"API-3 violated: poll(None) did not return once version 1 was sent: {e}") from None
    assert status == "ok" and v == 1, f"API-3 violated: poll(None) started before a send gave {status} {v}, not 1"
    rig.model.acked(0, 1)
    waited(f, "SEND-5")
    rig.check()


# ---- acks matched by version, and forged acks (VER-4, ACK-2, ACK-5): a scripted receiver on the wire ----


@pytest.mark.req("VER-4", "ACK-2", "SEND-5")
@pytest.mark.needs("wire")
def test_an_ack_of_an_older_pending_version_settles_that_send_alone(ws, closing):
    """The scripted receiver has the Receives of versions 1 and 2 pending and acks 1 only: the send of 1
    completes, the send of 2 does not (ACK-2: Ack(1) answers nothing above 1; VER-4: an ack is matched by its
    version, never taken for a newer one); its wait times out naming it, and Ack(2) then completes it."""
    sender, (peer,) = _scripted_all(ws, basic(0), 1, closing)
    try:
        f1 = sender.send_async(basic(1), timeout=tm.T)
        v1 = _next_receive(peer, 1)
        f2 = sender.send_async(basic(2), timeout=tm.T)
        v2 = _next_receive(peer, 2)
        peer.send(ack(0, v1))
        waited(f1, "VER-4", what="wait() on version 1 once Ack(1) came")
        assert not f2.done(), (f"ACK-2 violated: an Ack of version {v1} settled the send of version {v2}, still "
                               "pending at that receiver (VER-4: an ack is matched by its version only)")
        e = expect_error(ws, "SyncTimeoutError", f2.wait, tm.SHORT, ids="ACK-2, VER-4", naming=[0],
                         what=f"wait() on version {v2} after an Ack of {v1} only", limit=tm.SHORT + tm.SLACK)
        assert e.version == v2, f"SEND-2 violated: the SyncTimeoutError carries version {e.version}, not {v2}"
        peer.send(ack(0, v2))
        waited(f2, "ACK-1", what=f"wait() on version {v2} once Ack({v2}) came")
    finally:
        sender.close()


def _next_receive(peer, v: int) -> int:
    """The version of the next Receive the scripted receiver reads, which must be `v`; none in time is a matter
    of time."""
    try:
        got = peer.next_receive()["version"]
    except HarnessError as e:
        raise TooSlow(f"SEND-1 violated: no Receive of version {v} reached the scripted receiver: {e}") from None
    assert got == v, f"VER-1 violated: a Receive of version {got} came where version {v} was published"
    return got


@pytest.mark.req("ACK-5", "SM-S-9", "SEND-7", "SEC-5")
@pytest.mark.needs("wire")
@pytest.mark.parametrize("forged", ["the version it acked last", "an older version it acked",
                                    "a version sent to the others only"])
def test_an_ack_of_a_version_not_pending_is_a_violation_whatever_its_version(ws, closing, forged):
    """Two scripted receivers; receiver 1 acks versions 1 and 2, and version 3 goes to receiver 0 alone. With
    version 4 pending, receiver 1 writes an Ack of a version that is not pending for it, then Ack(4): Ack(2)
    again, Ack(1), or Ack(3), never sent to it (ACK-5, as in 5.3). The first is a violation: the send of 4 fails
    with ReceiverError naming receiver 1 as a violation, its channel is closed, and receiver 0 is served."""
    sender, peers = _scripted_all(ws, basic(0), 2, closing)
    try:
        for v, workers in ((1, [0, 1]), (2, [0, 1]), (3, [0])):
            f = sender.send_async(basic(v), workers=workers, timeout=tm.T)
            for i in workers:
                _next_receive(peers[i], v)
                peers[i].send(ack(i, v))
            waited(f, "SEND-5")
        f4 = sender.send_async(basic(4), workers=[1], timeout=tm.T)
        _next_receive(peers[1], 4)
        bad = {"the version it acked last": 2, "an older version it acked": 1,
               "a version sent to the others only": 3}[forged]
        peers[1].send_raw(frame(pack(ack(1, bad))) + frame(pack(ack(1, 4))))
        e = expect_error(ws, "ReceiverError", f4.wait, tm.T, ids="ACK-5, SM-S-9", naming=[1],
                         what=f"wait() on version 4 after an Ack of {bad} ({forged}), then Ack(4)",
                         limit=tm.REACTION + tm.SLACK)
        assert e.causes.get(1) == "violation", (
            f"ACK-5 violated: receiver 1 acked version {bad} ({forged}), not pending for it, yet the error's causes "
            f"are {e.causes}; a violation was due")
        in_time(peers[1].closed_by_peer(tm.SLACK),
                f"SM-S-9 violated: after an Ack of {bad} ({forged}) the sender kept receiver 1's channel open")
        f5 = sender.send_async(basic(5), workers=[0], timeout=tm.T)  # SEC-5: the other is served as before
        _next_receive(peers[0], 5)
        peers[0].send(ack(0, 5))
        waited(f5, "SEC-5", what="wait() on a send to the receiver that broke nothing")
    finally:
        sender.close()


#: How a mapping target is changed between two applies (ACK-7): each change leaves it unmatched by the manifest.
TARGET_CHANGES = {
    "a tensor of another dtype, same element size": lambda m: m.__setitem__("w", torch.zeros(4, 3, dtype=torch.int32)),
    "a tensor of another dtype and size": lambda m: m.__setitem__("w", torch.zeros(4, 3, dtype=torch.float64)),
    "an entry added": lambda m: m.__setitem__("extra", torch.zeros(2)),
    "an entry removed": lambda m: m.pop("steps"),
    "a sparse tensor": lambda m: m.__setitem__("w", torch.zeros(4, 3).to_sparse()),
    "a tensor on another device (meta)": lambda m: m.__setitem__("w", torch.empty(4, 3, device="meta")),
}


@pytest.mark.req("ACK-7", "ACK-6")
@pytest.mark.needs("push", "mapping")
@pytest.mark.parametrize("change", sorted(TARGET_CHANGES))
def test_a_target_changed_between_applies_is_checked_again(ws, change):
    """A push receiver into a mapping, in this process: after version 1 applied, the caller changes the mapping
    (another dtype, an entry added or removed, a sparse tensor). The next send fails with
    ReceiverError naming it (ACK-7: the target is checked as it is at each apply), no byte of the target's
    tensors is written and its version is None (ACK-6); once the mapping is mended, the next send reaches it."""
    from .model import describe as held
    from .test_pack import sent

    target = {n: torch.zeros_like(t) for n, t in basic(0).items()}
    sender, receiver = pair(ws, basic(0), target)
    try:
        sent(ws, sender, 1, basic(1))
        original = dict(target)
        TARGET_CHANGES[change](target)
        before = {n: t.clone() for n, t in target.items() if t.layout == torch.strided and t.device.type == "cpu"}
        expect_error(ws, "ReceiverError", sender.send, basic(2), timeout=tm.T, ids="ACK-7", naming=[0],
                     what=f"send to a receiver whose mapping target got {change} after connect")
        written = [n for n, t in before.items() if not torch.equal(t.view(-1).view(torch.uint8) if t.numel() else t,
                                                                     target[n].view(-1).view(torch.uint8)
                                                                     if target[n].numel() else target[n])]
        assert not written, f"ACK-7 violated: an apply refused for {change} wrote {written} of the target"
        assert receiver.version is None, (f"ACK-6 violated: after a failed apply ({change}) receiver.version is "
                                          f"{receiver.version}, not None")
        target.clear()
        target.update(original)
        sent(ws, sender, 3, basic(3))
        with receiver.reading(tm.T):
            assert held(target) == held(basic(3)), "ACK-3 violated: the mended target does not hold version 3"
    finally:
        sender.close()
        receiver.close()



@pytest.mark.req("ACK-4", "ACK-3", "CONS-3")
@pytest.mark.needs("pull", "mapping")
def test_a_pull_receiver_acks_only_once_its_apply_is_complete(ws):
    """A pull receiver in this process, into a mapping whose reads pause (its apply is slow, ACK-7 makes it read
    the target). The moment the send's wait() returns (the receiver acked version 1), the target already
    holds version 1's bytes: the ack came after the apply inside poll() (ACK-4), not before it."""
    import threading

    from .targets import ControlledMapping

    tensors = {n: torch.zeros_like(t) for n, t in basic(0).items()}
    target = ControlledMapping(tensors)
    sender, receiver = pair(ws, basic(0), target, mode="pull")
    try:
        target.pause = 0.3  # each read of the target by the apply waits: a window, not a bound
        f = sender.send_async(basic(1), timeout=tm.T)
        out = {}

        def poll():
            try:
                out["v"] = receiver.poll(tm.T)
            except Exception as e:  # noqa: BLE001 - reported below
                out["v"] = e

        t = threading.Thread(target=poll, daemon=True)
        t.start()
        waited(f, "ACK-4", what="wait() on version 1 while the pull receiver's poll() applies it")
        now = describe(dict(tensors))  # read at once, bare: after an ok ack the apply is complete
        assert now == describe(basic(1)), (
            "ACK-4 violated: the send of version 1 returned (its ack came) while the pull receiver's target did not "
            "hold version 1 yet: the ack was sent before the apply inside poll() completed")
        t.join(tm.T + tm.SLACK)
        target.pause = 0.0
        assert out.get("v") == 1, f"API-3 violated: poll() applying version 1 gave {out.get('v')!r}"
    finally:
        target.pause = 0.0
        sender.close()
        receiver.close()


@pytest.mark.req("ACK-7", "ACK-6", "ZC-1")
@pytest.mark.needs("zero_copy", "module", "push")
def test_a_zero_copy_module_that_stops_matching_has_none_of_its_tensors_rebound(ws):
    """A zero-copy receiver into a module, in this process, holds version 1 (its tensors view the slot). The
    caller gives one parameter `.data` of another shape; the next send fails with ReceiverError naming it
    (ACK-6), and none of the module's other tensors was rebound: each views the same memory as before and
    shows version 1's bytes (ACK-7: on a mismatch a zero-copy receiver rebinds none of its tensors)."""

    from torch import nn

    def net(seed: int) -> nn.Module:
        torch.manual_seed(seed)
        m = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
        m.register_buffer("steps", torch.arange(2, dtype=torch.int64) + seed)
        return m

    trainer, target = net(0), net(1)
    sender = ws.Sender(trainer, 1)
    receiver = ws.Receiver(sender.handle(0), target, zero_copy=True)
    try:
        connect_here(ws, sender, [receiver], "a healthy zero-copy receiver")

        def send(v: int) -> int:
            with torch.no_grad():
                for p in trainer.parameters():
                    p.add_(float(v))
                trainer.steps.add_(1)
            return sender.send(timeout=tm.T)

        try:
            bounded(send, 1, limit=tm.T + tm.SLACK, what="send of version 1")
        except (HarnessError, ws.SyncTimeoutError) as e:
            raise TooSlow(f"SEND-1 violated: a send to a healthy zero-copy receiver timed out: {e}") from None
        v1 = {n: t.detach().clone() for n, t in trainer.state_dict().items()}
        target[0].weight.data = torch.zeros(3, 5)  # no longer matches the manifest's [3, 4]
        held = {n: (t.data_ptr(), t.detach().clone()) for n, t in target.state_dict().items() if n != "0.weight"}
        expect_error(ws, "ReceiverError", send, 2, ids="ACK-7", naming=[0], limit=tm.T + tm.SLACK,
                     what="send to a zero-copy receiver one of whose module parameters was given another shape")
        now = target.state_dict()
        rebound = [n for n, (ptr, _) in held.items() if now[n].data_ptr() != ptr]
        assert not rebound, (f"ACK-7 violated: a zero-copy apply refused for a mismatch rebound {rebound} of the "
                             "module target")
        changed = [n for n, (_, b) in held.items() if not torch.equal(now[n].detach(), v1[n])]
        assert not changed, f"ACK-7 violated: after a refused zero-copy apply {changed} no longer show version 1"
        assert receiver.version is None, f"ACK-6 violated: after Ack(error) receiver.version is {receiver.version}"
    finally:
        receiver.close()
        sender.close()


# ---- the receiver under test against the suite's scripted sender (VER-3, SLOT-5): as test_receiver_wire.py ----


@pytest.fixture
def trainer():
    """A scripted sender (peers.ScriptedSender), closed at teardown."""
    from .peers import ScriptedSender

    s = ScriptedSender()
    yield s
    s.close()


@pytest.fixture
def subject(request):
    """The receiver under test, following the scripted sender (test_receiver_wire.Subject)."""
    from .test_receiver_wire import Subject

    s = Subject(request)
    yield s
    s.close()


@pytest.mark.req("VER-3", "SM-R-7", "ACK-1")
@pytest.mark.needs("wire", "rendezvous", "push")
@pytest.mark.parametrize("again", [6, 5], ids=["an older one never held", "a skipped one again"])
def test_a_receive_not_above_every_version_named_before_is_a_violation(trainer, subject, again):
    """After version 3 is acked, the scripted sender writes Receive(5), Receive(7) and then Receive(6) or
    Receive(5) again, back to back: the last is not above every version named on the channel (7), though above
    the version the receiver held when it arrived, which may still be 3. It is a violation (VER-3): the receiver
    closes its channel, and every version it reports holding is one published, bit for bit."""
    from .peers import layout as lay
    from .peers import slotinfo
    from .test_receiver_wire import _acked, _closes, _handshake, arrays, digest

    v0 = arrays(0)
    session, manifest, nbytes = _handshake(trainer, subject, v0)
    published = {0: digest(v0)} | {v: digest(arrays(v)) for v in (3, 5, 7)}
    fd = trainer.slot(1, lay(arrays(3))[1], nbytes)
    session.send({"type": "Receive", "version": 3, "slot": 1, "new_slots": [slotinfo(1, nbytes)]}, fds=[fd])
    _acked(session, subject, 3, published)
    for v, sid in ((5, 2), (7, 3)):
        fd = trainer.slot(sid, lay(arrays(v))[1], nbytes)
        session.send({"type": "Receive", "version": v, "slot": sid, "new_slots": [slotinfo(sid, nbytes)]}, fds=[fd])
    session.send({"type": "Receive", "version": again, "slot": 1, "new_slots": []})
    _closes(session, f"Receive({again}) after Receive(5) and Receive(7)", rule="VER-3")
    out = subject.finish()
    for v, d in out["applied"]:
        assert published.get(v) == d, f"ACK-3 violated: the receiver reports version {v} with other bytes"


@pytest.mark.req("SLOT-5", "SLOT-1", "ACK-1", "ACK-3")
@pytest.mark.needs("wire", "rendezvous", "push")
def test_a_slot_introduced_before_it_is_named_is_taken(trainer, subject):
    """The scripted sender's Receive(1) names slot 1 and introduces slots 1 and 2 with both handles (new_slots may
    list more than the slot named); Receive(2) later names slot 2 without introducing it. Both are acked ok and
    held bit for bit (SLOT-5: each slot introduced once, before any message names it)."""
    from .peers import layout as lay
    from .peers import slotinfo
    from .test_receiver_wire import _acked, _expect, _handshake, arrays, digest

    v0 = arrays(0)
    session, manifest, nbytes = _handshake(trainer, subject, v0)
    published = {v: digest(arrays(v)) for v in (0, 1, 2)}
    fd1 = trainer.slot(1, lay(arrays(1))[1], nbytes)
    fd2 = trainer.slot(2, lay(arrays(2))[1], nbytes)
    session.send({"type": "Receive", "version": 1, "slot": 1, "new_slots": [slotinfo(1, nbytes), slotinfo(2, nbytes)]},
                 fds=[fd1, fd2])
    _acked(session, subject, 1, published)
    session.send({"type": "Receive", "version": 2, "slot": 2, "new_slots": []})
    ack, _ = _expect(session, "Ack", "SLOT-5, ACK-1")
    assert (ack.get("version"), ack.get("status")) == (2, "ok"), (
        f"SLOT-5 violated: Receive(2) names slot 2, introduced with its handle by Receive(1) before any message named "
        f"it, and got {ack}")
    session.send({"type": "Stop"})
    out = subject.finish()
    for v, d in out["applied"]:
        assert published.get(v) == d, f"ACK-3 violated: the receiver holds version {v} with other bytes than published"
    assert [v for v, _ in out["applied"]][-1:] == [2], f"ACK-3 violated: the receiver ends at {out['applied']}"


def _publishes_without_waiting(ws, sender, versions, rid: str, why) -> None:
    """Each send_async of `versions` publishes at once; a wait for a slot breaks `rid` and says `why(v)` (SLOT-3)."""
    for v in versions:
        try:
            f = bounded(sender.send_async, basic(v), timeout=tm.SHORT, limit=tm.SHORT + tm.SLACK,
                        what=f"send_async of {v}")
        except ws.SyncTimeoutError as e:
            raise AssertionError(f"{rid} violated: {why(v)}: {e}") from None
        except HarnessError as e:
            raise TooSlow(f"SLOT-3 violated: {e}") from None
        assert f.version == v, f"VER-1 violated: send_async published {f.version}, expected {v}"


def _each_polls(receivers, newest: int) -> None:
    """Each pull receiver, its versions 1 to `newest` pending, applies the newest in one poll() (ACK-2)."""
    for r in receivers:
        try:
            got = bounded(r.poll, tm.T, limit=tm.T + tm.SLACK, what="poll")
        except HarnessError as err:
            raise TooSlow(f"API-3 violated: {err}") from None
        assert got == newest, f"ACK-2 violated: poll() with versions 1 to {newest} pending applied {got}"


@pytest.mark.req("SLOT-3", "SLOT-1", "VER-2", "API-1")
@pytest.mark.needs("pull")
def test_the_default_slot_bound_is_two_more_than_the_receivers(ws):
    """A sender of two pull receivers (in this process) that never poll, made without max_slots: every version
    stays pending at both, so each send needs a slot nobody may read. The bound is N+2 = 4 slots (API-1): the
    sends of versions 1 to 4 find or allocate one without waiting (SLOT-3: a send MUST NOT wait while the device
    holds fewer slots than the bound), the send of 5 finds four slots all in use, waits its timeout and fails
    with SyncTimeoutError naming both, publishing nothing (VER-2). Once they poll, the next send goes through."""

    sender = ws.Sender(basic(0), 2)
    receivers = [ws.Receiver(sender.handle(i), mode="pull") for i in range(2)]
    try:
        connect_here(ws, sender, receivers, "healthy pull receivers")
        _publishes_without_waiting(ws, sender, range(1, 5), "SLOT-3", lambda v: (
            f"with the default max_slots (N+2 = 4 for 2 receivers) the send of version {v} waited for a slot and "
            f"timed out, though only {max(1, v - 1)} slots were pinned"))
        e = expect_error(ws, "SyncTimeoutError", sender.send_async, basic(5), timeout=tm.SHORT, ids="SLOT-3",
                         what="send_async of 5 with the four slots of the default bound (N+2) in use", naming=[0, 1],
                         limit=tm.SHORT + tm.SLACK)
        assert e.version is None, f"SLOT-3 violated: a send that found no slot raised with version {e.version}"
        assert sender.version == 4, f"VER-2 violated: a send that found no slot left version {sender.version}"
        _each_polls(receivers, 4)
        f = bounded(sender.send_async, basic(5), timeout=tm.T, limit=tm.T + tm.SLACK, what="send_async of 5")
        assert f.version == 5, f"VER-1 violated: send_async published {f.version}, expected 5"
    finally:
        for r in receivers:
            r.close()
        sender.close()


def _scripted_all(ws, weights, n: int, closing, **sender_options):
    """A sender of `weights` whose n receivers are all played on the wire here, each answering its Init with
    Ready(ok); returns the sender and the scripted receivers (each with its Init in `.init`)."""
    import threading

    from .peers import ScriptedReceiver

    sender = ws.Sender(weights, n, **sender_options)
    try:
        peers = [ScriptedReceiver(sender.handle(i), i) for i in range(n)]
        for p in peers:
            closing(p)
        out = {}

        def connect():
            try:
                out["v"] = sender.connect(tm.T)
            except Exception as e:  # noqa: BLE001 - judged below
                out["v"] = e

        t = threading.Thread(target=connect, daemon=True)
        t.start()
        for p in peers:
            try:
                p.handshake()
            except HarnessError as e:
                raise TooSlow(f"INIT-1 violated: no Init reached a scripted receiver: {e}") from None
        t.join(tm.T + tm.SLACK)
        in_time(not t.is_alive(), "INIT-4 violated: connect() of correct scripted receivers did not return")
        assert not isinstance(out.get("v"), Exception), f"INIT-4 violated: connect() raised {out.get('v')!r}"
    except BaseException:
        sender.close()
        raise
    return sender, peers


@pytest.mark.req("SLOT-3", "SLOT-1", "VER-2")
@pytest.mark.needs("wire")
def test_max_slot_bytes_lowers_the_bound_and_must_leave_room_for_two_slots(ws, closing):
    """Weights of one 64 KiB array; the slot size S is read from an Init. `max_slot_bytes` below two slots
    (1, 2*S - 1) makes Sender() raise ValueError; 2*S is taken (SLOT-1's two). With 3.5*S and two receivers
    (default bound N+2 = 4) the bound is 3 slots: with both scripted receivers answering nothing, the sends of
    versions 1 to 3 go out without waiting, the send of 4 waits its timeout and fails with SyncTimeoutError
    naming both, publishing nothing (SLOT-3, VER-2)."""
    import inspect

    if "max_slot_bytes" not in inspect.signature(ws.Sender).parameters:
        from .names import NOT_DECLARED

        pytest.skip(NOT_DECLARED.format("max_slot_bytes (a keyword of Sender that the reference takes, API-1)"))
    w = {"x": torch.arange(16384, dtype=torch.float32)}
    probe, (peer,) = _scripted_all(ws, w, 1, closing)
    probe.close()
    size = max(s["nbytes"] for s in peer.init["slots"])
    assert size >= 65536, f"LAYOUT-1 violated: a slot of {size} bytes for an array of 65536"
    for bad in (1, 2 * size - 1):
        try:
            ws.Sender(w, 2, max_slot_bytes=bad).close()
        except ValueError:
            continue
        raise AssertionError(f"SLOT-3 violated: Sender(max_slot_bytes={bad}) was taken with slots of {size} bytes: "
                             "it leaves no room for the two slots of SLOT-1, ValueError was due")
    try:
        ws.Sender(w, 2, max_slot_bytes=2 * size).close()
    except ValueError as e:
        raise AssertionError(f"SLOT-3 violated: Sender(max_slot_bytes={2 * size}) refused, with slots of {size} bytes "
                             f"(room for two): {e}") from None
    sender, peers = _scripted_all(ws, w, 2, closing, max_slot_bytes=3 * size + size // 2)
    try:
        for v in (1, 2, 3):
            try:
                f = bounded(sender.send_async, {"x": w["x"] + v}, timeout=tm.SHORT, limit=tm.SHORT + tm.SLACK,
                            what=f"send_async of {v}")
            except ws.SyncTimeoutError as e:
                raise AssertionError(f"SLOT-3 violated: with max_slot_bytes of 3.5 slots the send of version {v} "
                                     f"waited for a slot and timed out with fewer than 3 slots pinned: {e}") from None
            except HarnessError as e:
                raise TooSlow(f"SLOT-3 violated: {e}") from None
            assert f.version == v, f"VER-1 violated: send_async published {f.version}, expected {v}"
        e = expect_error(ws, "SyncTimeoutError", sender.send_async, {"x": w["x"] + 4}, timeout=tm.SHORT, ids="SLOT-3",
                         what="send_async of 4 with the 3 slots max_slot_bytes allows all pinned (max_slots would "
                              "allow 4)", naming=[0, 1], limit=tm.SHORT + tm.SLACK)
        assert e.version is None, f"SLOT-3 violated: a send that found no slot raised with version {e.version}"
        assert sender.version == 3, f"VER-2 violated: a send that found no slot left version {sender.version}"
    finally:
        sender.close()


@pytest.mark.req("SEND-1", "ACK-2", "API-7")
@pytest.mark.needs("wire")
def test_a_synchronous_send_is_completed_by_an_ack_of_a_newer_version(ws, closing):
    """A synchronous send of version 1 waits in a thread; meanwhile version 2 is published by send_async from
    this one. The scripted receiver reads both Receives and acks 2 only: that Ack answers 1 too (ACK-2), so the
    waiting send returns 1 (SEND-1), and the future of 2 completes."""
    import threading

    sender, (peer,) = _scripted_all(ws, basic(0), 1, closing)
    try:
        out = {}

        def send():
            try:
                out["r"] = sender.send(basic(1), timeout=tm.T)
            except Exception as e:  # noqa: BLE001 - judged below
                out["r"] = e

        t = threading.Thread(target=send, daemon=True)
        t.start()
        try:
            r1 = peer.next_receive()
        except HarnessError as e:
            raise TooSlow(f"SEND-1 violated: no Receive of version 1 reached the scripted receiver: {e}") from None
        try:
            f2 = bounded(sender.send_async, basic(2), timeout=tm.T, limit=tm.T + tm.SLACK,
                         what="send_async from another thread while a send waits")
        except HarnessError as e:
            raise TooSlow(f"API-7 violated: {e}") from None
        try:
            r2 = peer.next_receive()
        except HarnessError as e:
            raise TooSlow(f"SEND-1 violated: no Receive of version 2 reached the scripted receiver: {e}") from None
        assert (r1["version"], r2["version"]) == (1, 2), f"VER-1 violated: Receives of {r1['version']}, {r2['version']}"
        peer.send(ack(0, 2))
        t.join(tm.T + tm.SLACK)
        in_time("r" in out and not isinstance(out["r"], ws.SyncTimeoutError),
                f"SEND-1 violated: send() of 1 did not return within {tm.T + tm.SLACK:.0f} s of the Ack of 2: "
                f"{out.get('r')!r}")
        assert out["r"] == 1, (f"SEND-1 violated: the receiver acked version 2, which answers 1 (ACK-2), yet the "
                               f"synchronous send of 1 gave {out['r']!r}")
        waited(f2, "SEND-5", what="wait() on version 2 once acked")
    finally:
        sender.close()


@pytest.mark.req("API-1", "SLOT-3", "SLOT-1", "VER-2")
@pytest.mark.needs("pull", "cast")
def test_max_slots_is_at_least_two_and_bounds_each_slot_group_alone(ws):
    """max_slots below 2 (1, 0, -1) makes Sender() raise ValueError (API-1: at least 2, the two of SLOT-1). With
    max_slots=3, two pull receivers in this process that never poll, receiver 1's slots cast to bfloat16 (LAYOUT-3:
    another slot group, like another device): every version stays pending at both, so each send needs a slot of
    each group. The sends of versions 1 to 3 go out without waiting, each group holding up to 3 slots, 6 in all
    (the bound counts per slot device, not in total); the send of 4 finds both groups full, waits its timeout and
    fails naming the holders of a full group, publishing nothing (SLOT-3, VER-2). Once both poll, the next send goes through."""
    for bad in (1, 0, -1):
        refused(ws.Sender, basic(0), 2, max_slots=bad, ids="API-1", what=f"Sender(max_slots={bad})",
                expected="max_slots is at least 2")
    sender = ws.Sender(basic(0), 2, max_slots=3, dtypes=[None, torch.bfloat16])
    receivers = [ws.Receiver(sender.handle(i), mode="pull") for i in range(2)]
    try:
        connect_here(ws, sender, receivers, "healthy pull receivers, one of them cast to bfloat16")
        _publishes_without_waiting(ws, sender, range(1, 4), "API-1", lambda v: (
            f"with max_slots=3 and two slot groups the send of version {v} waited for a slot and timed out, though "
            f"neither group held 3 slots pinned (the bound counts per slot device, not in total)"))
        e = expect_error(ws, "SyncTimeoutError", sender.send_async, basic(4), timeout=tm.SHORT, ids="SLOT-3",
                         what="send_async of 4 with the 3 slots of each group in use", limit=tm.SHORT + tm.SLACK)
        # Both groups are full: the error names the holders of the group (or groups) the send waited on.
        assert e.workers in ([0], [1], [0, 1]), (f"SLOT-3 violated: with both slot groups full the timeout names "
                                                 f"{e.workers}; receivers 0 and 1 hold the slots")
        assert e.version is None, f"SLOT-3 violated: a send that found no slot raised with version {e.version}"
        assert sender.version == 3, f"VER-2 violated: a send that found no slot left version {sender.version}"
        _each_polls(receivers, 3)
        try:
            f = bounded(sender.send_async, basic(4), timeout=tm.T, limit=tm.T + tm.SLACK, what="send_async of 4")
        except (HarnessError, ws.SyncTimeoutError) as err:
            raise TooSlow(f"SLOT-3 violated: once both receivers polled, the send of 4 found no slot: {err}") from None
        assert f.version == 4, f"VER-1 violated: send_async published {f.version}, expected 4"
    finally:
        for r in receivers:
            r.close()
        sender.close()
