"""Spec sections 6 and 7: buffers, consistency, zero-copy (SLOT-2, SLOT-4, LAYOUT-*, CONS-*, ZC-*)."""

import time

import pytest
import torch

from . import strategies as S
from . import timing as tm
from .bounds import HarnessError, bounded
from .clauses import occurred
from .model import describe, diff, digest
from .probes import new_fds, open_fds
from .rig import connect_here, expect_error, pair, readers_held_back, waited
from .verdict import Inconclusive, TooSlow, WorkerLost, checked_nothing, in_time

pytestmark = pytest.mark.needs("push")

#: Large enough that a copy takes a while, so a torn read has room to show.
LOAD_SPEC = [("big", torch.float32, (512, 1024)), ("half", torch.bfloat16, (1000,)), ("n", torch.int64, ()),
             ("flag", torch.bool, (3,))]


def basic(seed=0):
    return S.distinct_weights(S.BASIC_SPEC, seed)


def check_observations(rig, obs, who):
    assert not obs["errors"], f"CONS-1 violated: receiver {who}'s reader saw: {obs['errors'][:3]}"
    assert obs["reads"] > 0, f"CONS-2 violated: receiver {who}'s reader never got into reading()"
    for (v, d), n in obs["observed"]:
        assert v in rig.model.digests, f"ACK-3 violated: receiver {who} showed version {v}, which was never published"
        assert d == rig.model.digests[v], (
            f"CONS-1 violated: receiver {who} showed version {v} inside reading() ({n} reads), "
            "but its bytes are not version {v}'s (a torn or stale read)"
        )


@pytest.mark.req("CONS-1", "CONS-2", "ACK-3")
def test_no_torn_read_under_load(rigs):
    rig = rigs(S.distinct_weights(LOAD_SPEC, 0), 2)
    for w in rig.workers:
        w.call("reader_start")
    for k in range(1, 13):
        if k % 3:
            rig.send(S.distinct_weights(LOAD_SPEC, k))
        else:
            f = rig.send_async(S.distinct_weights(LOAD_SPEC, k))
            waited(f, "SEND-5")
            for i in range(2):
                rig.model.acked(i, k)
    for i, w in enumerate(rig.workers):
        check_observations(rig, w.call("reader_stop"), i)
    rig.check()


@pytest.mark.req("SLOT-2", "SLOT-4", "ACK-3", "CONS-1")
def test_a_slot_named_by_an_unanswered_receive_is_not_rewritten(rigs):
    """Receiver 0 holds reading() while version 1 is sent to both receivers, then versions 2 and 3 to receiver 1
    alone: version 1's slot stays named by receiver 0's unanswered Receive, so neither may be written into it.
    Receiver 0 is sent nothing newer, so once it has acked it holds version 1 as read from that slot after
    the other two were written, whatever the timing (SLOT-2)."""
    rig = rigs(basic(0), 2)
    w = rig.workers[0]
    w.call("hold")
    first = rig.send_async(basic(1))
    rig.send(basic(2), workers=[1])
    rig.send(basic(3), workers=[1])
    w.call("release")
    (v_in, _), (v_out, _) = w.call("held")
    waited(first, "SEND-5")
    rig.model.acked(0, 1)
    v, d = w.call("snapshot")
    assert v == 1, f"ACK-3 violated: receiver 0 was sent version 1 and nothing newer, yet shows version {v}"
    if v_in != v_out and digest(d) == rig.model.digests[1]:  # it applied version 1 before the others existed
        checked_nothing("receiver 0 applied version 1 inside reading() (CONS-2 is judged elsewhere), before "
                        "versions 2 and 3 were written: its slot was never at risk")
    assert digest(d) == rig.model.digests[1], (
        f"{'SLOT-2' if v_in == v_out else 'ACK-3'} violated: receiver 0 acked version 1 and holds the bytes of "
        f"{[k for k, g in rig.model.digests.items() if g == digest(d)] or 'no published version'}: "
        + ("a slot named by its unanswered Receive was written while it waited for the hold to end"
           if v_in == v_out else "its weights changed after its ack, with no Receive")
    )
    rig.check()


@pytest.mark.req("SLOT-2", "SLOT-4", "ACK-3")
@pytest.mark.needs("pull")
@pytest.mark.needs("mapping")
def test_a_slot_being_applied_is_not_rewritten(rigs):
    """Versions 2 and 3 go to receiver 1 alone while receiver 0 is inside poll(), applying version 1.

    The harness's target pauses when the receiver reads it; an implementation
    that reads its target before the slot is then between taking Receive(1)
    and reading its slot while the sender publishes. Receiver 0 is sent nothing
    newer, so poll() applies version 1, whatever the timing.
    """
    rig = rigs(basic(0), 2, modes=["pull", "push"])
    w = rig.workers[0]
    first = rig.send_async(basic(1))
    w.call("fault", ("slow", 0.6))
    w.submit("poll", tm.T)
    time.sleep(0.2)  # usually enough for poll() to be inside its apply; if not, the slot was not at risk yet
    rig.send(basic(2), workers=[1])
    rig.send(basic(3), workers=[1])
    status, v = w.result(tm.T + tm.BOUND)
    w.call("fault", None)
    assert status == "ok" and v == 1, f"ACK-1 violated: poll() gave {status} {v}, expected version 1"
    rig.model.acked(0, 1)
    got, d = w.call("snapshot")
    assert got == v and digest(d) == rig.model.digests[v], (
        f"SLOT-2 violated: receiver 0 applied version {v} but holds the bytes of "
        f"{[k for k, g in rig.model.digests.items() if g == digest(d)] or 'no published version'}: "
        "its slot was rewritten while the Receive naming it was unanswered"
    )
    waited(first, "SEND-5")
    rig.check()


@pytest.mark.req("CONS-2", "SEND-2")
def test_apply_waits_for_reading_and_readers_do_not_starve_it(rigs, ws):
    rig = rigs(basic(0), 1)
    w = rig.workers[0]
    w.call("hold")
    expect_error(ws, "SyncTimeoutError", rig.sender.send, basic(1), timeout=tm.SHORT, ids="CONS-2",
                 what="send while the receiver is inside reading()", naming=[0], limit=tm.SHORT + tm.SLACK)
    rig.model.publish(describe(basic(1)), [0])
    assert w.call("peek") == 0, "CONS-2 violated: a version was applied while a reading() block was open"
    w.call("release")
    # a continuous reader must not keep a send from completing (no starvation)
    w.call("reader_start")
    rig.send(basic(2), timeout=tm.T)
    check_observations(rig, w.call("reader_stop"), 0)
    assert w.call("nested") == 2, "CONS-2 violated: nested reading() in one thread"
    rig.check()


@pytest.mark.req("CONS-4")
def test_caller_tensors_are_never_shared_or_modified(rigs):
    w = basic(0)
    before = describe(w)
    ptrs = {n: t.data_ptr() for n, t in w.items()}
    rig = rigs(w, 1)
    rig.send()
    assert describe(w) == before, "CONS-4 violated: the sender modified the caller's tensors"
    assert not any(t.is_shared() for t in w.values()), "CONS-4 violated: the caller's tensors were made shared"
    assert {n: t.data_ptr() for n, t in w.items()} == ptrs, "CONS-4 violated: the caller's tensors were replaced"
    w["w"].add_(1.0)
    rig.check()  # the change is not visible to receivers before a send
    rig.send()  # weights=None re-reads the caller's object
    rig.check()


@pytest.mark.req("CONS-5")
@pytest.mark.parametrize("how, target", [
    pytest.param("sync", "mapping", marks=pytest.mark.needs("mapping")),
    pytest.param("async", "mapping", marks=pytest.mark.needs("mapping")), ("sync", None),
    pytest.param("sync", "module", marks=pytest.mark.needs("module")),
    pytest.param("sync", "tensordict", marks=pytest.mark.needs("tensordict")),
])
def test_subset_send_leaves_others_alone(rigs, how, target):
    """Every kind of target (None: the receiver's own), since one kind may share memory among receivers where
    another does not."""
    rig = rigs(basic(0), 3, targets=target)
    rig.send(basic(1))
    if how == "sync":
        rig.send(basic(2), workers=[1])
    else:
        f = rig.send_async(basic(2), workers=[1])
        assert f.workers == [1], f"API-2 violated: future.workers is {f.workers}"
        waited(f, "SEND-5")
        rig.model.acked(1, 2)
    time.sleep(0.1)
    for i in (0, 2):
        v, d = rig.workers[i].call("snapshot")
        assert v == 1, f"CONS-5 violated: receiver {i} was not targeted by version 2 but reports version {v}"
        assert d == rig.model.published[1], f"CONS-5 violated: receiver {i}'s bytes changed by a send to [1]"
    rig.check()


@pytest.mark.req("ZC-1", "ZC-2", "SLOT-2", "ACK-3", "CONS-5", "ACK-2")
@pytest.mark.needs("zero_copy")
@pytest.mark.parametrize("held", ["an acked version", "its Init's version", "the newest of two it caught up on"])
def test_zero_copy_slot_is_not_rewritten_while_held(rigs, held):
    """Zero-copy receiver 0 holds a slot while four versions go to receiver 1 only: the slot of a version it acked
    ok (ZC-2.a), or, never sent to after its handshake, its Init's slot from its Ready on (ZC-2.c), or, as a pull
    receiver that let versions 1 and 2 wait and took only 2 with one poll(), the slot of 2, which its one Ack
    answered with 1 (ACK-2): the hold moves to the slot of the version that Ack names (ZC-2.d)."""
    catch_up = held == "the newest of two it caught up on"
    rig = rigs(basic(0), 2, zero_copy=[True, False], targets=None, modes=["pull", "push"] if catch_up else None)
    first = 0 if held == "its Init's version" else 1
    if catch_up:
        futures = [rig.send_async(basic(k)) for k in (1, 2)]  # receiver 1 applies each; receiver 0 lets both wait
        got = rig.poll(0, tm.T)
        in_time(got is not None, f"ACK-1 violated: receiver 0's poll({tm.T:.0f}) found nothing; versions 1 and 2 were "
                                 "sent to it")
        if got != 2:
            checked_nothing(f"receiver 0's poll() applied {got}, not the newest pending version 2 (its Receive had not "
                            "been read yet): it caught up on nothing")
        for k, f in enumerate(futures, start=1):
            waited(f, "ACK-2")
            rig.model.acked(1, k)
        occurred("ZC-2.d")
        first = 2
    elif first:
        rig.send(basic(1))
    for k in range(first + 1, first + 5):
        rig.send(basic(k), workers=[1])
        v, d = rig.workers[0].call("snapshot")
        assert v == first and d == rig.model.published[first], (
            f"ZC-2, CONS-5 violated: the zero-copy receiver 0 holds version {first} ({held}) but after a send of "
            f"{k} to [1] it shows version {v} with {'other' if d != rig.model.published[first] else 'the same'} bytes"
        )
    if catch_up:  # a pull receiver applies only when it polls
        f = rig.send_async(basic(first + 5))
        rig.polled(0, first + 5, "ACK-1")
        waited(f, "SEND-5")
        rig.model.acked(1, first + 5)
    else:
        rig.send(basic(first + 5))
    rig.check()


@pytest.mark.req("ZC-2", "ACK-6", "ACK-7", "SLOT-3")
@pytest.mark.needs("zero_copy", "module")
def test_an_error_ack_of_a_zero_copy_receiver_keeps_both_its_slots_held(rigs, ws):
    """Receiver 0 (zero-copy, a module target) fails an apply: it may still read the slot it held and the
    failed version's (ZC-2), so with max_slots=3 one more version can go to receiver 1 and the next finds no
    free slot; receiver 0's tensors, left bound to the held slot (ACK-7), keep that version's bytes. Its next ok
    Ack ends both holds: the slots then serve receiver 1 again (shown first, on an earlier failure)."""
    rig = rigs(basic(0), 2, zero_copy=[True, False], targets=["module", "mapping"], max_slots=3)
    w0 = rig.workers[0]

    def fail(k: int) -> None:
        """Receiver 0's apply of version k fails (its target stops matching, then is mended)."""
        w0.call("fault", "raise")
        e = expect_error(ws, "ReceiverError", rig.sender.send, basic(k), timeout=tm.T, ids="ACK-6",
                         what=f"send of {k} to a zero-copy receiver whose apply fails", naming=[0])
        assert e.causes == {0: "error"}, f"ACK-6 violated: receiver 0's failed apply gave causes {e.causes}"
        occurred("ZC-2.b")
        rig.model.publish(describe(basic(k)), [0, 1])
        rig.model.failed_apply(0, k)
        w0.call("fault", None)  # its tensors are the held slot's views again: ACK-7 rebound none of them

    def still_holds(v: int, after: str) -> None:
        _, _, held = w0.call("snapshot", with_target=True)
        assert held == rig.model.published[v], (
            f"ZC-2 violated: receiver 0's zero-copy tensors view the slot of version {v}, which it holds, but after "
            f"{after} they show other bytes: {diff(rig.model.published[v], held)}")

    def third_slot(k: int) -> None:
        try:
            f = rig.send_async(basic(k))
        except TooSlow as err:  # no free slot in T
            raise Inconclusive(f"with receiver 0 holding two slots, version {k} found no slot: a sender MAY allocate "
                               f"no third one (SLOT-3), and then the holds cannot be told apart: {err}") from None
        waited(f, "SEND-5")
        for i in (0, 1):
            rig.model.acked(i, k)

    fail(1)  # holds version 0's slot and version 1's
    third_slot(2)  # its ok Ack ends both holds (ZC-2)
    for k in (3, 4):  # two versions to receiver 1 alone: both slots held before are free again
        rig.send(basic(k), workers=[1])
        still_holds(2, f"a send of {k} to receiver 1")
    fail(5)  # holds version 2's slot and version 5's, the latest
    rig.send(basic(6), workers=[1])  # into the third slot
    still_holds(2, "a send of 6 to receiver 1")
    expect_error(ws, "SyncTimeoutError", rig.sender.send, basic(7), workers=[1], timeout=tm.SHORT, ids="ZC-2",
                 what="send of 7 to receiver 1 while receiver 0 may still read the slots of versions 2 (held) and 5 "
                      "(failed) and version 6 is the latest, with max_slots=3", naming=[0], limit=tm.SHORT + tm.SLACK)
    assert rig.sender.version == 6, f"SLOT-3 violated: a send with no free slot left version {rig.sender.version}"
    still_holds(2, "the send of 7 that found no slot")
    rig.check([1])


@pytest.mark.req("ZC-3", "SLOT-4", "BAD-4", "SEC-6")
@pytest.mark.needs("zero_copy")
def test_zero_copy_weights_cannot_be_written(rigs):
    rig = rigs(basic(0), 2, zero_copy=[True, False], targets=None)
    rig.send(basic(1))
    try:
        status, value = rig.workers[0].outcome("zc_write")
    except WorkerLost:
        status = "died"  # a fault on a read-only mapping is an expected answer
        rig.model.gone(0)
    assert status != "ok", "ZC-3 violated: writing into zero-copy weights succeeded"
    rig.check([1])
    rig.workers[1].call("discard")
    rig.model.gone(1)
    rig.restart(1)
    v, d = rig.workers[1].call("snapshot")
    assert d == rig.model.published[1], "ZC-3 violated: a write into zero-copy weights reached the published slot"


@pytest.mark.req("LAYOUT-1", "ZC-1")
@pytest.mark.needs("zero_copy")
def test_zero_copy_views_are_aligned(rigs):
    rig = rigs(S.distinct_weights(S.BASIC_SPEC + [("odd", torch.int8, (3,)), ("after", torch.float64, (2,))], 0),
               1, zero_copy=[True], targets=None)
    offs = rig.workers[0].call("alignment")
    bad = {n: o for n, o in offs.items() if o}
    assert not bad, f"LAYOUT-1 violated: arrays not at a multiple of 64 bytes: {bad}"
    rig.check()


@pytest.mark.req("LAYOUT-2")
def test_handles_do_not_grow_with_the_number_of_arrays(rigs):
    """Counted in the trainer's process once two receivers are connected and a version went out to them: an
    implementation that shares one buffer per array shows it only then."""
    def fds_for(n_arrays):
        before = open_fds()
        rig = rigs({f"a{i}": torch.full((3,), float(i)) for i in range(n_arrays)}, 2)
        rig.send()
        used = len(new_fds(before))
        rig.check()
        rig.teardown()
        return used

    few, many = fds_for(1), fds_for(200)
    assert many <= few, (f"LAYOUT-2 violated: with 2 receivers connected, a sender of 200 arrays holds {many} "
                         f"descriptors, of 1 array {few}")


@pytest.mark.req("CONS-2", "CONS-1")
@pytest.mark.needs("push")
def test_overlapping_readers_do_not_starve_an_apply(rigs, ws):
    """Three threads read back to back, so some reading() block is always open; the apply must get in."""
    rig = rigs(basic(0), 1)
    w = rig.workers[0]
    w.call("reader_start", 3, 0.0)
    try:
        bounded(rig.sender.send, basic(1), timeout=tm.T, limit=tm.T + tm.SLACK, what="send under overlapping readers")
    except (ws.SyncTimeoutError, HarnessError):
        raise TooSlow(
            f"CONS-2 violated: an apply waited {tm.T} s behind overlapping reading() blocks: "
            "new readers must wait once an apply waits"
        ) from None
    finally:
        out = w.call("reader_stop")
    rig.model.publish(describe(basic(1)), [0])
    rig.model.acked(0, 1)
    assert not out["errors"], f"CONS-1 violated: {out['errors']}"
    rig.check()


@pytest.mark.req("LAYOUT-2", "ZC-1")
@pytest.mark.needs("zero_copy")
def test_receivers_on_one_device_read_one_copy_of_a_version(rigs):
    """Zero-copy receivers show where their bytes live: one version is one copy per device, never one per receiver."""
    rig = rigs(basic(0), 3, zero_copy=[True] * 3)
    rig.send(basic(1))
    where = [w.call("mapping") for w in rig.workers]
    if any(m is None for m in where):
        checked_nothing("the zero-copy weights are not in a shared file mapping; copies cannot be told apart")
    assert len(set(where)) == 1, (
        f"LAYOUT-2 violated: three receivers read version 1 from {len(set(where))} different copies: {where}"
    )
    rig.check()


@pytest.mark.waits(2)
@pytest.mark.req("CONS-2")
@pytest.mark.needs("push")
def test_a_waiting_apply_holds_new_readers_back(rigs):
    """One reader holds reading(); an apply then waits; a reader that starts now must wait for
    the apply, so it never sees the old version. A reader that started before the apply began
    to wait may see it, so only three failures in a row count."""
    rig = rigs(basic(0), 1)
    w = rig.workers[0]
    seen_old = []
    for k in (1, 2, 3):
        w.call("hold")
        future = rig.send_async(basic(k))
        time.sleep(1.0 * tm.SCALE)  # the receiver has taken Receive(k) and its apply waits for the hold
        w.call("reader_start", 1, 0.0005)
        time.sleep(0.5 * tm.SCALE)
        w.call("release")
        out = w.call("reader_stop")
        waited(future, "SEND-5")
        rig.model.acked(0, k)
        old = sorted({v for (v, _), _ in out["observed"] if v is not None and v < k})
        if not old:
            break
        seen_old.append(old)
    else:  # the sleeps assume the apply waits by then: on a busy machine it may not, so re-checked slower
        raise TooSlow(
            f"CONS-2 violated: readers that started while an apply waited read the old version "
            f"in three tries out of three ({seen_old}); once an apply waits, new reading() blocks must wait for it"
        )
    rig.check()


@pytest.mark.req("CONS-2", "CONS-3")
@pytest.mark.needs("pull")
def test_poll_waits_for_reading_blocks_in_other_threads(rigs):
    """Pull mode: a thread reads for a second; poll() in another thread must wait for it."""
    rig = rigs(basic(0), 1, modes=["pull"])
    w = rig.workers[0]
    rig.send_async(basic(1))
    w.call("hold", 1.0)
    rig.polled(0, 1, "CONS-3")
    (v_in, d_in), (v_out, d_out) = w.call("held")
    assert (v_in, d_in) == (v_out, d_out), (
        f"CONS-2 violated: poll() applied version {v_out} while another thread was inside reading() "
        f"(it entered at version {v_in})"
    )
    w.call("release")
    rig.check()


@pytest.mark.req("LIFE-5", "ZC-3", "ACK-3")
@pytest.mark.needs("zero_copy")
@pytest.mark.parametrize("target", [None, pytest.param("module", marks=pytest.mark.needs("module"))])
@pytest.mark.needs("mapping")
def test_a_closed_zero_copy_receiver_keeps_its_version(rigs, ws, target):
    """A zero-copy receiver closes holding version 1; the sender may then write its slot again (SLOT-2
    counts live receivers only), and does, for the versions sent after. Its weights, and a module
    target's tensors, still show version 1 bit for bit (LIFE-5)."""
    rig = rigs(basic(0), 2, zero_copy=[True, False], targets=[target, "mapping"], max_slots=2)
    rig.send(basic(1))
    w = rig.workers[0]
    w.call("close", keep=True)
    rig.model.gone(0)
    for k in range(2, 6):  # two slots: each is written again at least once
        rig.send(basic(k), workers=[1])
        rig.check([1])
    obs = w.call("observe")
    assert obs["snapshot"][0] == "value", f"LIFE-6 violated: a closed receiver's weights could not be read: {obs}"
    v, d, held = obs["snapshot"][1]
    assert v == 1 and d == rig.model.published[1], (
        f"LIFE-5 violated: a closed zero-copy receiver reports version {v}, and its weights "
        f"{'are' if d == rig.model.published[1] else 'are not'} version 1's bytes after its slot was written again"
    )
    assert held is None or held == d, "LIFE-5 violated: the closed receiver's module target no longer holds version 1"


@pytest.mark.req("ZC-3", "ZC-1")
@pytest.mark.needs("zero_copy", "module")
def test_zero_copy_weights_are_handed_out_outside_autograd(ws):
    """A zero-copy receiver's module, in this process: after connect and after a send, every parameter it
    rebound to the slot has requires_grad false, so no optimizer takes the slot's bytes for trainable ones."""
    from torch import nn

    model = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    sender = ws.Sender(model, 1)
    try:
        target = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
        receiver = ws.Receiver(sender.handle(0), target, zero_copy=True)
        connect_here(ws, sender, [receiver], "a healthy zero-copy receiver")
        for when in ("after connect", "after a send"):
            trainable = [n for n, p in target.named_parameters() if p.requires_grad]
            assert not trainable, f"ZC-3 violated: {when}, zero-copy parameters {trainable} still require grad"
            with torch.no_grad():
                model[0].weight.add_(1.0)
            try:
                bounded(sender.send, timeout=tm.T, limit=tm.T + tm.SLACK, what="send")
            except (HarnessError, ws.SyncTimeoutError) as e:
                raise TooSlow(f"SEND-1 violated: a send to a healthy zero-copy receiver timed out: {e}") from None
        assert torch.equal(target[0].weight, model[0].weight.detach()), "ACK-3 violated: the module holds other bytes"
        receiver.close()
    finally:
        sender.close()


@pytest.mark.req("LAYOUT-3", "ACK-3", "INIT-3")
@pytest.mark.needs("cast", "module", "push")
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_cast_slots_give_each_receiver_the_rounded_weights_it_asked_for(ws, dtype):
    """An fp32 trainer, `dtypes=` asking a lower precision for receivers 0 and 1: a copy-mode module of that
    dtype, a zero-copy one (where declared) and an fp32 receiver each hold, after every send, exactly the
    trainer's weights cast to their dtype; receiver 0's Init names that dtype. Without the request, a
    target of that dtype is refused (INIT-3)."""
    import threading

    from torch import nn

    low = getattr(torch, dtype)
    zero_copy = "zero_copy" in ws.CAPABILITIES
    trainer = nn.Sequential(nn.Linear(16, 8), nn.Linear(8, 4))
    trainer.register_buffer("steps", torch.zeros(3, dtype=torch.int64))  # not floating: kept as it is
    targets = [nn.Sequential(nn.Linear(16, 8), nn.Linear(8, 4)).to(low) for _ in range(2)]
    targets.append(nn.Sequential(nn.Linear(16, 8), nn.Linear(8, 4)))
    for t in targets:
        t.register_buffer("steps", torch.ones(3, dtype=torch.int64))
    sender = ws.Sender(trainer, 3, dtypes=[low, low, None])
    receivers = []
    try:
        receivers = [ws.Receiver(sender.handle(0), targets[0]),
                     ws.Receiver(sender.handle(1), targets[1], zero_copy=zero_copy),
                     ws.Receiver(sender.handle(2), targets[2])]
        # Targets of the dtype asked for: a refusal is the cast's fault.
        connect_here(ws, sender, receivers, "receivers whose targets have the dtype asked for by dtypes=",
                     refusal="LAYOUT-3")
        gen = torch.Generator().manual_seed(7)
        for v in range(1, 4):
            with torch.no_grad():
                for p in trainer.parameters():
                    p.copy_(torch.randn(p.shape, generator=gen) * 10 ** v)
                trainer.steps.add_(v)
            try:
                got = bounded(sender.send, timeout=tm.T, limit=tm.T + tm.SLACK, what="send")
            except (HarnessError, ws.SyncTimeoutError) as e:
                raise TooSlow(f"SEND-1 violated: a send to healthy cast receivers timed out: {e}") from None
            assert got == v, f"VER-1 violated: send returned {got}, expected {v}"
            for i, target in enumerate(targets):
                with receivers[i].reading(tm.SHORT):
                    for name, want in trainer.state_dict().items():
                        held = target.state_dict()[name]
                        expect = want.to(low) if i < 2 and want.is_floating_point() else want
                        assert held.dtype == expect.dtype and torch.equal(held, expect), (
                            f"LAYOUT-3 violated: receiver {i} holds {name} as {held.dtype} {held.flatten()[:3]}, "
                            f"expected {expect.dtype} {expect.flatten()[:3]} after version {v}")
    finally:
        for r in receivers:
            r.close()
        sender.close()
    plain = ws.Sender(trainer, 1)
    try:
        wrong = nn.Sequential(nn.Linear(16, 8), nn.Linear(8, 4)).to(low)
        wrong.register_buffer("steps", torch.ones(3, dtype=torch.int64))  # only the dtype differs
        refused = ws.Receiver(plain.handle(0), wrong)

        def trainer_side():
            try:
                plain.connect(tm.T)
            except ws.WeightSyncError:
                pass  # the refusal reaches the sender as Ready(error)

        threading.Thread(target=trainer_side, daemon=True).start()
        expect_error(ws, "WeightsMismatchError", refused.connect, tm.T, ids="INIT-3",
                     what=f"connect() of a {dtype} target to fp32 slots nobody asked to cast")
        refused.close()
    finally:
        plain.close()


def _apply_seen_waiting(ws, receiver) -> None:
    """Returns once an apply is seen waiting for a reading() block another thread holds open at version 0: a
    reading(timeout) in this thread is held back (CONS-2: a waiting apply holds new blocks back). Within T
    of the send it must be; an apply that ran inside the open block is CONS-2's violation, and one never seen
    at all leaves the test inconclusive."""
    if readers_held_back(ws, receiver, tm.T):
        return
    assert receiver.version == 0, (f"CONS-2 violated: version {receiver.version} was applied while a reading() "
                                   "block opened at version 0 was still open (an apply waits for open blocks)")
    raise Inconclusive(f"within {tm.T} s of the send no reading(timeout) in another thread was held back: the "
                       "apply was never seen waiting for the open block (CONS-2.c decides that)")


@pytest.mark.req("CONS-2", "API-3")
@pytest.mark.needs("pull")
def test_readers_held_back_by_a_poll_that_gave_up_go_in(ws):
    """A pull receiver in this process. Thread A holds reading() open; a version is pending; thread P's poll(timeout)
    waits for A, and while it waits new blocks wait for it (CONS-2), which this test sees as a reading(timeout) held
    back. Thread B then opens reading() with a long timeout. P's timeout passes: it returns None, and no apply runs
    or waits any more, so B goes in then, beside A (readers wait only for an apply that runs or waits to run,
    API-3), not when A leaves or B's own timeout passes."""
    import threading

    sender, receiver = pair(ws, basic(0), None, mode="pull")
    entered, release, polled, b = threading.Event(), threading.Event(), {}, {}
    wait = tm.SLACK  # P's timeout: long enough to see it wait and start B meanwhile

    def reader_a():
        with receiver.reading(tm.T):
            entered.set()
            release.wait(2 * tm.T)

    def poller():
        try:
            polled["v"] = receiver.poll(wait)
        except Exception as e:  # noqa: BLE001 - judged below
            polled["v"] = f"{type(e).__name__}: {e}"
        polled["at"] = time.monotonic()

    def reader_b():
        t0 = b["start"] = time.monotonic()
        try:
            with receiver.reading(tm.T):
                b["in"] = time.monotonic()
        except Exception as e:  # noqa: BLE001 - judged below
            b["error"] = (time.monotonic() - t0, f"{type(e).__name__}: {e}")

    a = threading.Thread(target=reader_a, daemon=True, name="conformance-reader-a")
    p = threading.Thread(target=poller, daemon=True, name="conformance-poller")
    rb = threading.Thread(target=reader_b, daemon=True, name="conformance-reader-b")
    try:
        a.start()
        in_time(entered.wait(tm.T), f"CONS-2 violated: reading() on an idle receiver did not enter in {tm.T} s")
        f = sender.send_async(basic(1), timeout=tm.T)
        started = time.monotonic()
        p.start()
        if not readers_held_back(ws, receiver, wait / 2):
            raise Inconclusive(f"within {wait / 2:.1f} s of poll({wait:g}) no reading(timeout) was held back: the "
                               "poll was never seen waiting for the open block (CONS-2.d decides that)")
        rb.start()
        p.join(wait + tm.SLACK)
        in_time(not p.is_alive(), f"API-3 violated: poll({wait:g}) behind an open reading() block had not returned "
                                  f"after {time.monotonic() - started:.1f} s")
        assert polled["v"] is None and receiver.version == 0, (
            f"API-3 violated: poll({wait:g}) behind an open reading() block returned {polled['v']!r} (receiver.version "
            f"{receiver.version}): the version it could not apply stays pending, it returns None")
        rb.join(tm.SLACK)  # A still holds its block: B goes in beside it, or waits for what no longer waits
        if b["start"] >= polled["at"]:  # the probes took the whole of P's wait: B was never held back by it
            checked_nothing(f"poll({wait:g}) had given up before the second reader started (the probes took "
                            f"{b['start'] - started:.1f} s on this machine)")
        occurred("CONS-2.i")
        in_time("in" in b and b["in"] - polled["at"] <= tm.SLACK, (
            f"CONS-2 violated: poll({wait:g}) gave up at {polled['at'] - started:.1f} s and no apply ran or waited any "
            "more, yet a reading() it had held back " + (
                f"entered {b['in'] - polled['at']:.1f} s after" if "in" in b else
                f"raised after {b['error'][0]:.1f} s: {b['error'][1]}" if "error" in b else
                f"had not entered {tm.SLACK:.1f} s after, while another thread's block stayed open")))
        release.set()
        a.join(tm.T)
        assert receiver.poll(tm.T) == 1, "API-3 violated: the version left pending was not applied by the next poll()"
        waited(f, "API-3")
    finally:
        release.set()
        sender.close()
        receiver.close()


@pytest.mark.req("CONS-2", "CONS-1")
@pytest.mark.needs("push")
def test_a_nested_reading_never_waits_even_for_a_waiting_apply(ws):
    """A push receiver in this process. Thread A opens reading(); a version arrives and its apply waits for A,
    which this test knows once another thread's reading(timeout) is held back (CONS-2: a waiting apply holds new
    blocks back). A then opens a nested reading(): it must enter without waiting (CONS-2: reading() nests, a
    nested block never waits), still at version 0; once A leaves both blocks the apply runs and the send returns.
    Then the thread whose reading(timeout) timed out opens a block and sends: that apply waits for it (a block that
    timed out leaves its thread outside any block)."""
    import threading

    sender, receiver = pair(ws, basic(0), None)
    entered, go, out = threading.Event(), threading.Event(), {}

    def reader_a():
        try:
            with receiver.reading(tm.T):
                entered.set()
                go.wait(tm.T + tm.SLACK)
                t0 = time.monotonic()
                try:
                    with receiver.reading(tm.T):
                        out["nested"] = (time.monotonic() - t0, receiver.version)
                except Exception as e:  # noqa: BLE001 - reported below
                    out["nested_error"] = (time.monotonic() - t0, f"{type(e).__name__}: {e}")
        except Exception as e:  # noqa: BLE001
            out["outer_error"] = f"{type(e).__name__}: {e}"

    a = threading.Thread(target=reader_a, daemon=True, name="conformance-nested-reader")
    try:
        a.start()
        in_time(entered.wait(tm.T), f"CONS-2 violated: reading() on an idle receiver did not enter in {tm.T} s")
        f = sender.send_async(basic(1), timeout=tm.T)
        _apply_seen_waiting(ws, receiver)
        occurred("CONS-2.f")
        go.set()
        a.join(tm.T + tm.SLACK)
        assert "outer_error" not in out, f"CONS-2 violated: the outer reading() block raised {out.get('outer_error')}"
        assert "nested_error" not in out, (
            f"CONS-2 violated: a nested reading() opened while an apply waited for its own thread's outer block "
            f"raised after {out['nested_error'][0]:.1f} s: {out['nested_error'][1]}; a nested block never waits")
        in_time(not a.is_alive() and "nested" in out,
                f"CONS-2 violated: a nested reading() opened while an apply waited for the outer block did not enter "
                f"within {tm.T + tm.SLACK:.0f} s")
        assert out["nested"][1] == 0, (f"CONS-2 violated: inside reading() blocks opened at version 0 the receiver "
                                       f"showed version {out['nested'][1]}")
        waited(f, "CONS-2", what="wait() on the version whose apply waited for the reader, once it left")
        assert receiver.version == 1, f"ACK-4 violated: the send returned, receiver.version is {receiver.version}"
        # This thread's reading(timeout) timed out above: it left this thread outside any block, so its next
        # reading() is a first block, which the next apply waits for (not a nested one that nobody counts).
        occurred("CONS-2.g")
        with receiver.reading(tm.T):
            g = sender.send_async(basic(2), timeout=tm.T)
            try:
                v = g.wait(min(0.5 * tm.SCALE, tm.SHORT))
            except ws.SyncTimeoutError:
                v = None  # the apply waits for this block, as it must
            assert v is None and receiver.version == 1, (
                f"CONS-2 violated: version {v} was applied and acked inside a reading() block (the receiver shows "
                f"{receiver.version}) opened by a thread whose earlier reading(timeout) had timed out: a timed-out "
                "block must leave the thread outside any block, and an apply waits while a block is open")
        waited(g, "CONS-2", what="wait() on the version whose apply waited for that block, once it ended")
    finally:
        go.set()
        sender.close()
        receiver.close()


@pytest.mark.req("CONS-2", "CONS-1", "CONS-3")
@pytest.mark.parametrize("mode", [pytest.param("push", marks=pytest.mark.needs("push")),
                                  pytest.param("pull", marks=pytest.mark.needs("push", "pull"))])
def test_blocks_belong_to_their_receiver(ws, mode):
    """This process holds two receivers of one sender, r0 (push) and r1 in `mode`, as a worker with a policy and a
    reference model does. Inside r0.reading(): push, r1.reading() opened there is r1's first block, so a version sent
    to r1 inside both waits for it (its weights and version stay as they were) and is applied once the blocks end
    (CONS-2, CONS-1); pull, r1.poll() is no poll inside reading() (CONS-3): it applies the version sent to r1."""
    sender = ws.Sender(basic(0), 2)
    r0 = ws.Receiver(sender.handle(0))
    r1 = ws.Receiver(sender.handle(1), **({} if mode == "push" else {"mode": mode}))
    try:
        connect_here(ws, sender, [r0, r1], "two receivers in this process")
        if mode == "push":
            with r0.reading(tm.T), r1.reading(tm.T):
                before = {k: v.clone() for k, v in dict(r1.weights).items()}
                f = sender.send_async(basic(1), workers=[1], timeout=tm.T)
                try:
                    v = f.wait(min(0.5 * tm.SCALE, tm.SHORT))
                except ws.SyncTimeoutError:
                    v = None  # r1's apply waits for r1's block, as it must
                occurred("CONS-2.h")
                same = all(torch.equal(before[k], t) for k, t in dict(r1.weights).items())
                assert v is None and r1.version == 0 and same, (
                    f"CONS-2 violated: a version sent to r1 was applied inside r1.reading(), opened inside r0.reading() "
                    f"in one thread (the send returned {v}, r1.version is {r1.version}, its weights "
                    f"{'held' if same else 'changed'}): each receiver's blocks are its own, so this is r1's first block")
        else:
            f = sender.send_async(basic(1), workers=[1], timeout=tm.T)
            with r0.reading(tm.T):
                try:
                    got = bounded(r1.poll, tm.T, limit=tm.T + tm.SLACK, what="r1.poll() inside r0.reading()")
                except HarnessError as e:
                    raise TooSlow(f"CONS-3 violated: {e}") from None
                except ws.LocalProtocolError as e:
                    raise AssertionError(f"CONS-3 violated: r1.poll() inside r0.reading() raised LocalProtocolError "
                                         f"({e}); only a poll inside its own receiver's block is refused") from None
                occurred("CONS-3.d")
                assert got == 1 and r1.version == 1, (
                    f"CONS-3 violated: r1.poll() inside r0.reading() returned {got} (r1.version {r1.version}), "
                    "not the version sent to it")
        waited(f, "CONS-2", what="wait() on the version sent to r1, once its blocks ended")
        assert r1.version == 1 and r0.version == 0, (
            f"ACK-4 violated: after the send to r1 returned, r1.version is {r1.version} and r0's {r0.version}")
    finally:
        sender.close()
        r0.close()
        r1.close()


@pytest.mark.req("API-7", "API-3", "SEND-5", "CONS-2")
@pytest.mark.needs("push")
def test_a_zero_timeout_never_waits(ws):
    """A timeout of 0 bounds a wait at zero; it is not "no timeout" (API-7.h). A push receiver in this process;
    thread A holds a reading() block and a version's apply waits for it, seen as in the test above. Then, while
    A still holds it: this thread's reading(0) raises SyncTimeoutError at once (a waiting apply holds new blocks
    back, CONS-2); the send's wait(0) raises SyncTimeoutError at once (its target cannot ack yet); send(timeout=0)
    publishes and raises SyncTimeoutError at once. A leaves only when this test lets it, so a zero taken for "no
    bound" waits until the harness gives up on it (T). Then every version goes through."""
    import threading

    sender, receiver = pair(ws, basic(0), None)
    entered, go = threading.Event(), threading.Event()

    def reader_a():
        with receiver.reading(tm.T):
            entered.set()
            go.wait(8 * (tm.T + tm.SLACK))  # set by this test, which never takes that long

    a = threading.Thread(target=reader_a, daemon=True, name="conformance-zero-timeout-reader")
    try:
        a.start()
        in_time(entered.wait(tm.T), f"CONS-2 violated: reading() on an idle receiver did not enter in {tm.T} s")
        f = sender.send_async(basic(1), timeout=tm.T)
        _apply_seen_waiting(ws, receiver)
        occurred("API-7.h")

        def entered_block():
            with receiver.reading(0):
                return receiver.version

        for what, call in (("reading(0) while an apply waits", entered_block),
                           ("future.wait(0) while its target cannot ack", lambda: f.wait(0)),
                           ("send(timeout=0) while its target cannot ack", lambda: sender.send(basic(2), timeout=0))):
            t0 = time.monotonic()
            try:
                got = bounded(call, limit=tm.T, what=what)
            except HarnessError:
                raise TooSlow(f"API-7 violated: {what} waited more than {tm.T:.0f} s: a timeout of 0 is a bound of "
                              "zero, not no bound") from None
            except ws.SyncTimeoutError:
                elapsed = time.monotonic() - t0
                in_time(elapsed <= tm.SLACK, f"API-7 violated: {what} raised SyncTimeoutError only after "
                                             f"{elapsed:.1f} s (a timeout of 0 waits for nothing)")
                continue
            if not a.is_alive():
                raise Inconclusive(f"{what} returned {got!r}, but the reader had left its block by then")
            raise AssertionError(f"API-7 violated: {what} returned {got!r} after {time.monotonic() - t0:.1f} s; "
                                 "it had to raise SyncTimeoutError at once")
        go.set()
        a.join(tm.T + tm.SLACK)
        waited(f, "CONS-2", what="wait() on the version whose apply waited for the reader, once it left")
        v = bounded(sender.send, basic(3), timeout=tm.T, limit=tm.T + tm.SLACK, what="a send once A left")
        assert v == sender.version, f"SEND-1 violated: the send once A left returned {v}, sender.version is {sender.version}"
    finally:
        go.set()
        sender.close()
        receiver.close()


def _local(ws, weights, n: int, **sender_options):
    """A sender of `weights` and n connected push receivers without a target, all in this process."""
    sender = ws.Sender(weights, n, **sender_options)
    receivers = []
    try:
        receivers = [ws.Receiver(sender.handle(i)) for i in range(n)]
        connect_here(ws, sender, receivers, "healthy receivers in this process")
    except BaseException:
        for r in receivers:
            r.close()
        sender.close()
        raise
    return sender, receivers


@pytest.mark.req("LAYOUT-3", "ACK-3")
@pytest.mark.needs("cast", "push")
@pytest.mark.parametrize("form", ["one dtype", "a function of the id"])
def test_cast_dtypes_given_as_one_dtype_or_a_function(ws, form):
    """`dtypes=` as one dtype casts every receiver's slots; as a function of the receiver id, those it gives a
    dtype for (None leaves the others as they are). Receivers without a target then hold, after each send, the
    trainer's floating weights rounded to their dtype, integer ones as they are (LAYOUT-3). A float64 weight just
    past a midpoint of the 16-bit dtype (`edge`) may arrive rounded once or through float32, and as nothing else."""
    gen = torch.Generator().manual_seed(3)
    # 1 + half a step of bf16 (or fp16) + 2^-30: rounded once it goes up, through float32 it ties down to 1.
    past_midpoint = {torch.bfloat16: (1 + 2 ** -8 + 2 ** -30, 1 + 2 ** -7),
                     torch.float16: (1 + 2 ** -11 + 2 ** -30, 1 + 2 ** -10)}

    def weights(v: int) -> dict:
        x = {d: past_midpoint[d][0] for d in past_midpoint}
        return {"w": torch.randn(6, 5, generator=gen) * 10 ** v, "h": torch.randn(7, generator=gen, dtype=torch.float64),
                "steps": torch.arange(3, dtype=torch.int64) + v,
                "edge": torch.tensor([x[torch.bfloat16], -x[torch.bfloat16], x[torch.float16], -x[torch.float16], v],
                                     dtype=torch.float64)}

    def allowed(sent, dtype) -> list:
        """What receiving `sent` cast to `dtype` may hold: torch's conversion, or each past-midpoint value rounded once."""
        once = sent.clone()
        for d, (x, up) in past_midpoint.items():
            if d == dtype:
                once[sent == x], once[sent == -x] = up, -up
        return [sent.to(dtype), once.to(dtype)]

    w = weights(0)
    if form == "one dtype":
        dtypes, want = torch.bfloat16, [torch.bfloat16, torch.bfloat16]
    else:
        dtypes, want = (lambda i: torch.float16 if i == 1 else None), [None, torch.float16]
    sender, receivers = _local(ws, w, 2, dtypes=dtypes)
    try:
        for v in (1, 2):
            w = weights(v)
            try:
                got = bounded(sender.send, w, timeout=tm.T, limit=tm.T + tm.SLACK, what="send")
            except (HarnessError, ws.SyncTimeoutError) as e:
                raise TooSlow(f"SEND-1 violated: a send to healthy cast receivers timed out: {e}") from None
            assert got == v, f"VER-1 violated: send returned {got}, expected {v}"
            for i, r in enumerate(receivers):
                with r.reading(tm.T):
                    for name, sent in w.items():
                        cast = want[i] is not None and sent.is_floating_point()
                        expect = allowed(sent, want[i]) if cast else [sent]
                        held = r.weights[name]
                        assert held.dtype == expect[0].dtype and any(torch.equal(held, e) for e in expect), (
                            f"LAYOUT-3 violated: with dtypes= {form}, receiver {i} holds {name} as {held.dtype} "
                            f"{held.flatten()[:5].tolist()}, expected {expect[0].dtype} "
                            + " or ".join(str(e.flatten()[:5].tolist()) for e in expect))
    finally:
        for r in receivers:
            r.close()
        sender.close()


@pytest.mark.req("CONS-4")
@pytest.mark.needs("push")
@pytest.mark.parametrize("source", [pytest.param("module", marks=pytest.mark.needs("module")),
                                    pytest.param("tensordict", marks=pytest.mark.needs("tensordict"))])
def test_a_module_or_tensordict_sender_leaves_its_tensors_alone(ws, source):
    """A sender made from a module (parameters and a buffer) or a TensorDict: a send neither makes the caller's
    tensors shared, nor replaces nor modifies them; a change made in place after it reaches the receiver only
    through the next send, which re-reads the object (CONS-4)."""
    from torch import nn

    if source == "module":
        obj = nn.Linear(5, 3)
        obj.register_buffer("steps", torch.arange(2, dtype=torch.int64))

        def tensors():
            return dict(obj.state_dict(keep_vars=True))
    else:
        from tensordict import TensorDict

        obj = TensorDict({"w": torch.randn(5, 3), "inner": {"b": torch.randn(3)},
                          "steps": torch.arange(2, dtype=torch.int64)}, batch_size=[])

        def tensors():
            return {".".join(k) if isinstance(k, tuple) else k: v
                    for k, v in obj.items(include_nested=True, leaves_only=True)}

    before = {n: t.detach().clone() for n, t in tensors().items()}
    ptrs = {n: t.data_ptr() for n, t in tensors().items()}
    ids = {n: id(t) for n, t in tensors().items()}
    sender, (receiver,) = _local(ws, obj, 1)
    try:
        try:
            bounded(sender.send, timeout=tm.T, limit=tm.T + tm.SLACK, what="send")
        except (HarnessError, ws.SyncTimeoutError) as e:
            raise TooSlow(f"SEND-1 violated: a send to a healthy receiver timed out: {e}") from None
        now = tensors()
        assert {n: id(t) for n, t in now.items()} == ids, f"CONS-4 violated: the {source}'s tensors were replaced"
        assert {n: t.data_ptr() for n, t in now.items()} == ptrs, (
            f"CONS-4 violated: the {source}'s tensors were moved to other memory")
        shared = [n for n, t in now.items() if t.is_shared()]
        assert not shared, f"CONS-4 violated: the {source}'s tensors {shared} were made shared"
        changed = [n for n, t in now.items() if not torch.equal(t.detach(), before[n])]
        assert not changed, f"CONS-4 violated: a send modified the {source}'s tensors {changed}"
        name = next(n for n, t in now.items() if t.is_floating_point())
        with torch.no_grad():
            now[name].add_(1.0)
        with receiver.reading(tm.T):
            assert torch.equal(receiver.weights[name], before[name]), (
                f"CONS-4 violated: a change to the {source}'s {name} after a send reached the receiver without one")
        try:
            bounded(sender.send, timeout=tm.T, limit=tm.T + tm.SLACK, what="send")
        except (HarnessError, ws.SyncTimeoutError) as e:
            raise TooSlow(f"SEND-1 violated: a send to a healthy receiver timed out: {e}") from None
        with receiver.reading(tm.T):
            assert torch.equal(receiver.weights[name], before[name] + 1.0), (
                f"API-2 violated: send() did not re-read the {source}: the receiver does not hold the changed {name}")
    finally:
        receiver.close()
        sender.close()


@pytest.mark.req("LAYOUT-3", "LAYOUT-1", "INIT-1")
@pytest.mark.needs("cast", "wire")
def test_the_init_of_a_cast_receiver_names_its_dtype_and_layout(ws, closing):
    """A scripted receiver reads the Init of a receiver whose slots `dtypes=` casts to bfloat16: every floating
    entry names bfloat16 with the bytes of that dtype, integer and bool entries are as they are, each at an
    offset that is a multiple of 64 in manifest order (LAYOUT-1 for that dtype), the slot holds them all, and
    its bytes are version 0 rounded to bfloat16 (LAYOUT-3)."""
    import mmap
    import os
    import threading

    from .peers import ScriptedReceiver

    w = {"a": torch.randn(3, 5), "n": torch.arange(7, dtype=torch.int32), "d": torch.randn(4, dtype=torch.float64),
         "flag": torch.tensor([True, False, True]), "h": torch.randn(2, 2).to(torch.float16)}
    sender = ws.Sender(w, 1, dtypes=torch.bfloat16)
    try:
        peer = ScriptedReceiver(sender.handle(0), 0)
        closing(peer)
        t = threading.Thread(target=lambda: _attempt_connect(sender), daemon=True)
        t.start()
        try:
            init = peer.handshake(answer=False)
        except HarnessError as e:
            raise TooSlow(f"INIT-1 violated: no Init reached the scripted receiver: {e}") from None
        manifest = init["manifest"]
        assert [e["name"] for e in manifest] == list(w), f"INIT-1 violated: the manifest lists {manifest}"
        end = 0
        for e in manifest:
            t0 = w[e["name"]]
            want = "bfloat16" if t0.is_floating_point() else str(t0.dtype).removeprefix("torch.")
            size = t0.numel() * (2 if t0.is_floating_point() else t0.element_size())
            assert e["dtype"] == want and e["nbytes"] == size and list(e["shape"]) == list(t0.shape), (
                f"LAYOUT-3 violated: the Init of a receiver cast to bfloat16 lists {e['name']} as {e['dtype']} "
                f"{list(e['shape'])} of {e['nbytes']} bytes; expected {want} {list(t0.shape)} of {size} bytes")
            assert e["offset"] % 64 == 0 and e["offset"] >= end, (
                f"LAYOUT-1 violated: {e['name']} at offset {e['offset']} in a cast slot (after an array ending at {end})")
            end = e["offset"] + e["nbytes"]
        slot = next(s for s in init["slots"] if s["slot"] == init["slot"])
        assert slot["nbytes"] >= end, f"LAYOUT-1 violated: a cast slot of {slot['nbytes']} bytes holds {end}"
        fd = peer.slot_fds[init["slot"]]
        with mmap.mmap(fd, os.fstat(fd).st_size, prot=mmap.PROT_READ) as m:
            for e in manifest:
                t0 = w[e["name"]]
                expect = (t0.to(torch.bfloat16) if t0.is_floating_point() else t0).contiguous()
                raw = expect.view(-1).view(torch.uint8).numpy().tobytes()
                assert bytes(m[e["offset"]: e["offset"] + e["nbytes"]]) == raw, (
                    f"LAYOUT-3 violated: the cast slot holds other bytes for {e['name']} than version 0 rounded "
                    "to bfloat16")
    finally:
        sender.close()


def _attempt_connect(sender) -> None:
    """sender.connect in a thread whose outcome the test does not judge (its receiver never answers)."""
    try:
        sender.connect(tm.SHORT)
    except Exception:  # noqa: BLE001
        pass


@pytest.mark.req("CONS-1", "CONS-3")
@pytest.mark.needs("pull")
def test_the_polling_thread_sees_one_version_between_polls_without_reading(ws):
    """A pull receiver in this process. While versions 1 and 2 reach it and it has not polled, its polling thread
    reads its weights outside any reading() block, again and again: each read is version 0, every array. After a
    poll it reads version 2 the same way, until the next poll (CONS-1: between two polls the polling thread sees
    one version; CONS-3: nothing is applied outside poll())."""

    sender, receiver = pair(ws, basic(0), None, mode="pull")
    try:
        futures = [sender.send_async(basic(v), timeout=tm.T) for v in (1, 2)]
        for expect, then in ((0, 3), (2, None)):
            want = describe(basic(expect))
            end = time.monotonic() + 0.3 * tm.SCALE  # how long it keeps reading: a window, not a bound
            reads = 0
            while reads < 3 or time.monotonic() < end:
                got = describe(dict(receiver.weights))
                reads += 1
                assert got == want and receiver.version == expect, (
                    f"CONS-1 violated: between two polls the polling thread, reading outside reading(), saw "
                    f"version {receiver.version} {'with other bytes than' if got != want else 'and the bytes of'} "
                    f"version {expect}'s (read {reads})")
            if then is None:
                break
            try:
                got_v = bounded(receiver.poll, tm.T, limit=tm.T + tm.SLACK, what="poll")
            except HarnessError as e:
                raise TooSlow(f"API-3 violated: {e}") from None
            assert got_v == 2, f"ACK-2 violated: poll() with versions 1 and 2 pending applied {got_v}"
            futures.append(sender.send_async(basic(then), timeout=tm.T))
        for f in futures[:2]:
            waited(f, "SEND-5")
    finally:
        sender.close()
        receiver.close()


@pytest.mark.req("ACK-3", "SLOT-4", "CONS-5")
def test_a_copying_receiver_reads_no_slot_once_it_acked(ws):
    """Two copying receivers without a target in this process (Ready with holds_slot false), a sender with
    max_slots=2. Version 1 goes to both; versions 2 and 3 to receiver 1 alone, so the sender writes both slots
    again, the one version 1 was read from included (SLOT-2 lets it: receiver 0 answered and holds none).
    Receiver 0 still holds version 1 bit for bit: after its ack it read no slot (ACK-3, SLOT-4)."""
    sender, receivers = _local(ws, basic(0), 2, max_slots=2)
    try:
        for v, workers in ((1, None), (2, [1]), (3, [1])):
            try:
                got = bounded(sender.send, basic(v), workers=workers, timeout=tm.T, limit=tm.T + tm.SLACK, what="send")
            except (HarnessError, ws.SyncTimeoutError) as e:
                raise TooSlow(f"SEND-1 violated: a send to healthy receivers timed out: {e}") from None
            assert got == v, f"VER-1 violated: send returned {got}, expected {v}"
        for i, want in ((0, 1), (1, 3)):
            with receivers[i].reading(tm.T):
                v, d = receivers[i].version, describe(dict(receivers[i].weights))
            assert v == want and d == describe(basic(want)), (
                f"ACK-3 violated: receiver {i} acked version {want} and was sent nothing newer, yet it shows version "
                f"{v}{' with its bytes' if d == describe(basic(want)) else ' with other bytes'} after the sender wrote "
                "both slots again: a copying receiver read a slot after its ack (SLOT-4)")
    finally:
        for r in receivers:
            r.close()
        sender.close()


@pytest.mark.req("LAYOUT-1", "WIRE-8", "ACK-3", "INIT-4")
def test_hundreds_of_small_odd_sized_arrays_of_one_dtype_arrive_each_in_its_place(ws):
    """LAYOUT-1 pads each array to a 64-byte offset. Weights of 600 small arrays whose sizes are no multiple of 64
    bytes (a mixture's biases: a run of 400 float32 arrays, then 200 bfloat16) arrive bit for bit, at connect and
    after a send: a sender that copies a long run of one dtype in one gather, as if its arrays sat back to back,
    writes every array after the first odd-sized one at the wrong place (an outside round's bug let through)."""
    sizes = [1 + (7 * i) % 37 for i in range(600)]
    spec = [(f"e{i:03d}", torch.float32 if i < 400 else torch.bfloat16, (n,)) for i, n in enumerate(sizes)]
    weights = [S.distinct_weights(spec, seed) for seed in range(2)]
    sender, receiver = pair(ws, weights[0], None)
    try:
        occurred("LAYOUT-1.d")
        assert describe(receiver.weights) == describe(weights[0]), (
            f"LAYOUT-1, INIT-4 violated: a receiver connected at version 0 of 600 small arrays holds other bytes "
            f"(the sender's layout or the receiver's reading of it): "
            f"{diff(describe(weights[0]), describe(receiver.weights))}")
        try:
            v = bounded(sender.send, weights[1], timeout=tm.T, limit=tm.T + tm.SLACK, what="send of 600 small arrays")
        except (HarnessError, ws.SyncTimeoutError) as e:
            raise TooSlow(f"SEND-1 violated: a send of 600 small arrays to a healthy receiver: {e}") from None
        assert receiver.version == v and describe(receiver.weights) == describe(weights[1]), (
            f"LAYOUT-1, ACK-3 violated: after acking version {v} of 600 small arrays the receiver holds other bytes: "
            f"{diff(describe(weights[1]), describe(receiver.weights))}")
    finally:
        receiver.close()
        sender.close()
