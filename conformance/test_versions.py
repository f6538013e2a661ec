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
from .rig import check_receiver_error, expect_error, waited
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
    rig = rigs(basic(0), 1, modes=["pull"])
    f = rig.send_async(basic(1))
    e = expect_error(ws, "SyncTimeoutError", f.wait, tm.SHORT, ids="SEND-5", what="wait() with no poll", naming=[0],
                     limit=tm.SHORT + tm.SLACK)
    assert e.version == 1, f"SEND-2 violated: SyncTimeoutError carries version {e.version}, expected 1"
    assert isinstance(e, TimeoutError), "API-4 violated: SyncTimeoutError is not a TimeoutError"
    rig.polled(0, 1, "SEND-5")
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
    counts per group). Receiver 0 (pull, never polling) pins every slot of its group; receiver 1 (push,
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
    while True:  # the third slot is the sender's to allocate or not (SLOT-3's MAY); a fourth is past max_slots
        try:
            f = bounded(rig.sender.send_async, basic(k), timeout=tm.SHORT, limit=tm.SHORT + tm.SLACK,
                        what=f"send_async of {k}")
        except ws.SyncTimeoutError as e:
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
