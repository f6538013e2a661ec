"""Spec 9.1 and what it implies later: the handshake's refusals, the target check it repeats
before every apply, and what `stopped` says afterwards (INIT-*, ACK-7, SM-R-8).

Some tests run a receiver in this process, beside its sender (as CUDA-5 allows), so that
the test owns the target object: it can give a target tensor another shape between two
applies (ACK-7), or hand the receiver a tensor that matches the manifest but refuses
in-place writes (an inference-mode tensor), which fails any apply that writes it in
place, as API-3 says a mapping target is written (INIT-6).
"""

import threading

import pytest
import torch

from . import server
from . import strategies as S
from . import timing as tm
from .bounds import HarnessError, bounded
from .model import describe
from .names import lacking
from .rig import expect_error, expect_remote_error, spec_of, waited
from .verdict import TooSlow, in_time


def basic(seed=0):
    return S.distinct_weights(S.BASIC_SPEC, seed)


def zeros_like(weights: dict) -> dict:
    return {n: torch.zeros_like(t) for n, t in weights.items()}


def unwritable(t: torch.Tensor) -> torch.Tensor:
    """A tensor with `t`'s dtype, shape and device whose in-place writes raise."""
    with torch.inference_mode():
        return torch.zeros_like(t)


class Module(torch.nn.Module):
    """A module target with `weights`' names: floating entries are Parameters, as in a policy."""

    def __init__(self, weights: dict):
        super().__init__()
        for n, t in weights.items():
            if t.dtype.is_floating_point:
                self.register_parameter(n, torch.nn.Parameter(torch.zeros_like(t)))
            else:
                self.register_buffer(n, torch.zeros_like(t))


def handshake(ws, weights, target, mode="push", timeout=None, limit=None):
    """A sender and one receiver in this process; both connect (the receiver in a thread).

    Returns the two objects and the outcome of each side's connect: ("ok", value),
    ("err", exception), or for the sender ("hang", what) when its connect, given
    `timeout`, had not returned after `limit` seconds.
    """
    timeout = tm.T if timeout is None else timeout
    limit = tm.T + tm.SLACK if limit is None else limit
    lacking(ws, mode)
    if isinstance(target, dict):
        lacking(ws, "mapping")
    sender = ws.Sender(weights, 1)
    receiver = ws.Receiver(sender.handle(0), target, mode=mode)
    box = {}

    def run():
        try:
            box["rx"] = ("ok", receiver.connect(tm.T))
        except Exception as e:  # noqa: BLE001 - the test looks at it
            box["rx"] = ("err", e)

    t = threading.Thread(target=run, name="conformance-receiver-connect", daemon=True)
    t.start()
    try:
        tx = ("ok", bounded(sender.connect, timeout, limit=limit, what="sender.connect"))
    except HarnessError as e:
        tx = ("hang", str(e))
    except ws.WeightSyncError as e:
        tx = ("err", e)
    t.join(tm.T + tm.SLACK)
    in_time("rx" in box, f"INIT-5 violated: receiver.connect({tm.T}) did not return within {tm.T + tm.SLACK} s")
    return sender, receiver, tx, box["rx"]


def connected(ws, tx, rx) -> None:
    """Both sides of `handshake` connected at version 0 (INIT-4); a timeout is a matter of time."""
    for side, (status, value) in (("sender", tx), ("receiver", rx)):
        if status == "hang" or (status == "err" and isinstance(value, ws.SyncTimeoutError)):
            raise TooSlow(f"INIT-4 violated: the {side}'s connect of a healthy pair did not complete: {value}")
    assert tx[0] == "ok" and rx == ("ok", 0), f"INIT-4 violated: the handshake gave {tx!r}, {rx!r}"


def close(*objs):
    for o in objs:
        try:
            o.close()
        except Exception:  # noqa: BLE001 - the test already reported what went wrong
            pass


@pytest.mark.req("INIT-6", "INIT-5", "SM-R-8", "SM-S-2", "SM-R-1")
def test_a_failed_apply_at_connect_is_answered(ws):
    """The target matches the manifest, but writing it raises: Ready(error), not silence."""
    weights = basic(0)
    target = zeros_like(weights)
    target["w"] = unwritable(target["w"])
    # A timeout of 3T, a bound of T: an implementation that answers nothing fails by a wide margin.
    sender, receiver, tx, rx = handshake(ws, weights, target, timeout=3 * tm.T, limit=tm.T)
    try:
        status, e = tx
        in_time(status != "hang", f"INIT-6, INIT-5 violated: the receiver's apply failed and {e}")
        in_time(not isinstance(e, ws.SyncTimeoutError), f"INIT-6 violated: sender.connect timed out ({e}); the "
                                                        "receiver's Ready(error) did not come in time")
        assert status == "err" and isinstance(e, ws.ReceiverError), (
            f"INIT-6 violated: sender.connect with a receiver whose apply failed gave {e!r}, not ReceiverError"
        )
        assert e.workers == [0] and e.details.get(0), f"INIT-6 violated: the ReceiverError names {e.workers}: {e.details}"
        status, err = rx
        assert status == "err" and isinstance(err, ws.ReceiverError), (
            f"INIT-6 violated: receiver.connect whose apply failed gave {err!r}, not ReceiverError"
        )
        assert err.workers == [0] and err.version == 0 and err.details.get(0), (
            f"INIT-6 violated: the receiver's ReceiverError says workers {err.workers}, version {err.version}, "
            f"details {err.details}; expected [0], the Init's version 0, and why"
        )
        assert receiver.stopped is True, "SM-R-8, SM-R-1 violated: a receiver that answered Ready(error) is not stopped"
        assert receiver.version is None, f"INIT-6 violated: a receiver that failed its handshake holds {receiver.version}"
    finally:
        close(receiver, sender)


@pytest.mark.req("INIT-6", "INIT-5")
@pytest.mark.needs("mapping")  # the harness's unwritable fault is made for a mapping target
def test_a_failed_apply_at_connect_is_answered_across_processes(rigs, ws):
    """As above, with the receiver in a worker process and a second receiver that stays silent."""
    if not hasattr(server.Server, "do_unwritable"):
        pytest.skip(
            "needs the harness worker command 'unwritable': replace the open target's first tensor by one of "
            "the same dtype, shape and device whose in-place writes raise (made under torch.inference_mode())"
        )
    rig = rigs(basic(0), 2, connect=False)
    rig.open(0)
    rig.workers[0].call("unwritable")
    rig.open(1)  # has its handle, never calls connect()
    rig.workers[0].submit("connect", tm.T)
    e = expect_error(ws, "ReceiverError", lambda: rig.sender.connect(3 * tm.T, workers=[0, 1]), ids="INIT-6",
                     what="sender.connect with one receiver whose apply fails and one silent", naming=[0], limit=tm.T)
    assert e.details.get(0), f"INIT-6 violated: the ReceiverError carries no detail for receiver 0: {e.details}"
    err = expect_remote_error(rig.workers[0].result(tm.T + tm.SLACK), "ReceiverError", ids="INIT-6",
                              what="receiver.connect whose apply failed")
    assert err.workers == [0] and err.version == 0, (
        f"INIT-6 violated: the receiver's ReceiverError names {err.workers} and version {err.version}, not [0] and 0"
    )
    state = rig.workers[0].call("state")
    assert state == {"version": None, "stopped": True}, f"SM-R-8 violated: after Ready(error) the receiver shows {state}"


@pytest.mark.req("ACK-7", "ACK-6", "SM-R-8", "INIT-3")
@pytest.mark.needs("pull")
def test_a_target_entry_replaced_by_another_shape_is_refused_unwritten(ws):
    """Pull mode, mapping target: the check runs at each apply, on the mapping as it is now."""
    target = zeros_like(basic(0))
    sender, receiver, tx, rx = handshake(ws, basic(0), target, mode="pull")
    try:
        connected(ws, tx, rx)
        target["w"] = torch.zeros(3, 4)  # the manifest says float32[4, 3]
        before = describe(target)
        f = sender.send_async(basic(1), timeout=tm.T)
        expect_error(ws, "ReceiverError", receiver.poll, tm.T, ids="ACK-7", what="poll() with a target that no longer matches",
                     naming=[0])
        expect_error(ws, "ReceiverError", f.wait, tm.T, ids="ACK-7", what="wait() for a receiver whose target no longer matches",
                     naming=[0])
        assert describe(target) == before, "ACK-7 violated: an apply to a mismatching target wrote bytes of it"
        assert receiver.version is None, f"ACK-6 violated: receiver.version is {receiver.version} after a failed apply"
        assert receiver.stopped is False, "SM-R-8 violated: an Ack(error) made the receiver stopped"
        target["w"] = torch.zeros(4, 3)  # mended: the next version applies
        f = sender.send_async(basic(2), timeout=tm.T)
        try:
            got = bounded(receiver.poll, tm.T, limit=tm.T + tm.SLACK, what="poll")
        except HarnessError as e:
            raise TooSlow(f"ACK-6 violated: {e}") from None
        assert got == 2, f"ACK-6 violated: the mended target's poll() gave {got}, not 2"
        waited(f, "ACK-6")
        assert describe(target) == describe(basic(2)), "ACK-3 violated: the mended target does not hold version 2"
    finally:
        close(receiver, sender)


@pytest.mark.req("ACK-7", "ACK-6", "INIT-3")
@pytest.mark.needs("push", "module")
def test_a_parameter_whose_data_changed_shape_is_refused_unwritten(ws):
    """Push mode, module target: assigning a parameter's `.data` is seen at the next apply."""
    weights = basic(0)
    module = Module(weights)
    sender, receiver, tx, rx = handshake(ws, weights, module)
    try:
        connected(ws, tx, rx)
        module.w.data = torch.zeros(4, 3, 2)
        before = describe(module.state_dict())
        e = expect_error(ws, "ReceiverError", sender.send, basic(1), timeout=3 * tm.T, ids="ACK-7",
                         what="send to a module whose parameter changed shape", naming=[0], limit=tm.T)
        assert e.version == 1 and e.details.get(0), f"ACK-6 violated: the error says version {e.version}: {e.details}"
        assert describe(module.state_dict()) == before, "ACK-7 violated: an apply to a mismatching module wrote bytes of it"
        module.w.data = torch.zeros(4, 3)
        try:
            got = bounded(sender.send, basic(2), timeout=tm.T, limit=tm.T + tm.SLACK, what="send")
        except (HarnessError, ws.SyncTimeoutError) as e:
            raise TooSlow(f"ACK-6 violated: a send to the mended module did not complete: {e}") from None
        assert got == 2, f"ACK-6 violated: a send to the mended module returned {got}, not 2"
        with receiver.reading():
            got = describe(module.state_dict())
        assert got == describe(basic(2)), "ACK-3 violated: the mended module does not hold version 2"
    finally:
        close(receiver, sender)


@pytest.mark.req("SM-R-8", "INIT-3", "ACK-6", "LIFE-6")
@pytest.mark.needs("mapping")
def test_stopped_is_true_exactly_in_stopped_failed_and_closed(rigs, ws):
    """new: false; failed (refused Init): true; live, an error ack included: false; closed: true."""
    rig = rigs(basic(0), 2, connect=False)
    wrong = [(n, "float64" if n == "w" else d, s) for n, d, s in spec_of(rig.weights)]
    rig.workers[0].call("open", rig.sender.handle(0), "push", False, ("mapping", wrong))
    state = rig.workers[0].call("state")
    assert state["stopped"] is False, f"SM-R-8 violated: a receiver before connect() shows {state}"
    rig.workers[0].submit("connect", tm.T)
    expect_error(ws, "ReceiverError", lambda: rig.sender.connect(tm.T, workers=[0]), ids="INIT-3",
                 what="sender.connect with a mismatching target", naming=[0])
    expect_remote_error(rig.workers[0].result(tm.T + tm.SLACK), "WeightsMismatchError", ids="INIT-3",
                        what="receiver.connect with a mismatching dtype")
    state = rig.workers[0].call("state")
    assert state["stopped"] is True, f"SM-R-8 violated: a receiver that refused the Init shows {state}"

    rig.connect([1])
    assert rig.workers[1].call("state")["stopped"] is False, "SM-R-8 violated: a live receiver is stopped"
    rig.workers[1].call("fault", "raise")
    expect_error(ws, "ReceiverError", rig.sender.send, basic(1), workers=[1], timeout=tm.T, ids="ACK-6",
                 what="send to a receiver whose apply fails", naming=[1])
    state = rig.workers[1].call("state")
    assert state["stopped"] is False, f"SM-R-8 violated: an Ack(error) made the receiver stopped: {state}"
    rig.workers[1].call("close", keep=True)
    out = rig.workers[1].call("closed_calls")
    assert out["stopped"] == ("value", True), f"SM-R-8 violated: a closed receiver's stopped is {out['stopped']!r}"


@pytest.mark.req("INIT-3", "WIRE-3")
def test_a_refusal_whose_reason_is_long_still_fits_the_wire(ws):
    """A target that does not match weights whose names are long in UTF-8 (1000 four-byte
    characters, within WIRE-3's 4,096 bytes): the receiver's Ready(error) must keep its detail
    within 4,096 bytes (cut, if need be), so that the sender reports the refusal as the receiver's
    error (INIT-3), not as a violation of the wire."""
    name = "\U0001F600" * 1000
    sender, receiver, tx, rx = handshake(ws, {name: torch.zeros(3)}, {name: torch.zeros(4)})
    try:
        if tx[0] == "hang":
            raise TooSlow(f"INIT-5 violated: {tx[1]}")
        status, e = tx
        assert status == "err" and isinstance(e, ws.ReceiverError) and 0 in getattr(e, "workers", ()), (
            f"INIT-3 violated: sender.connect with a mismatching target gave {tx!r}")
        cause = getattr(e, "causes", {}).get(0)
        assert cause != "violation", (
            f"WIRE-3 violated: the receiver's refusal broke the wire (a detail over 4,096 bytes?): {e}")
        assert cause == "error", f"INIT-3 violated: the refusal reached the sender as {cause!r}, not 'error': {e}"
        assert rx[0] == "err" and isinstance(rx[1], ws.WeightsMismatchError), (
            f"INIT-3 violated: receiver.connect with a mismatching target gave {rx!r}")
    finally:
        close(receiver, sender)


@pytest.mark.req("ACK-3", "LAYOUT-1")
def test_large_arrays_back_to_back_arrive_whole(ws):
    """A model of megabyte arrays that sit back to back (each a multiple of 64 bytes, as weight matrices
    are), then one odd one: after each send the receiver holds every byte of every array. Small models
    alone miss a copy that treats large neighbouring arrays differently from small ones (the reference
    once copied only the first array of such a run)."""
    shapes = [(512, 1024), (1024, 512), (3, 512, 512), (700, 333), (4096,)]
    weights = {f"w{i}": torch.zeros(shape) for i, shape in enumerate(shapes)}
    sender, receiver, tx, rx = handshake(ws, weights, zeros_like(weights))
    try:
        connected(ws, tx, rx)
        for v in (1, 2):
            fresh = {n: torch.randn(t.shape, generator=torch.Generator().manual_seed(10 * v + i))
                     for i, (n, t) in enumerate(weights.items())}
            for n, t in weights.items():
                t.copy_(fresh[n])
            version = bounded(sender.send, timeout=tm.T, limit=tm.T + tm.SLACK, what=f"send {v}")
            with receiver.reading():
                wrong = [n for n, t in receiver.weights.items() if not torch.equal(t, fresh[n])]
            assert not wrong, f"ACK-3 violated: after version {version} the receiver holds other bytes in {wrong}"
    except HarnessError as e:
        raise TooSlow(f"SEND-1 violated: {e}") from None
    finally:
        close(receiver, sender)


@pytest.mark.req("BAD-2", "VER-2")
def test_a_tensor_reshaped_onto_its_own_storage_is_refused(ws):
    """`t.data = t.view(4, 8)` on an (8, 4) tensor changes its shape and keeps its identity, its data
    pointer and its version counter, so a check that skips tensors it saw unchanged by those three lets
    it through, and a copy that concatenates arrays (same bytes, no shapes) does not notice either. The
    next send raises WeightsMismatchError and publishes nothing; a view of the old shape is accepted again."""
    weights = {"a": torch.arange(32, dtype=torch.float32).reshape(8, 4), "b": torch.ones(8, 4), "c": torch.ones(7)}
    sender, receiver, tx, rx = handshake(ws, weights, zeros_like(weights))
    try:
        connected(ws, tx, rx)
        version = bounded(sender.send, timeout=tm.T, limit=tm.T + tm.SLACK, what="send of matching weights")
        for shape in ((4, 8), (32,), (8, 4, 1)):
            weights["a"].data = weights["a"].data.view(shape)
            expect_error(ws, "WeightsMismatchError", sender.send, timeout=tm.T, ids="BAD-2",
                         what=f"a send after a.data became a {shape} view of its own storage")
            assert sender.version == version, f"VER-2 violated: the refused send moved the version to {sender.version}"
            weights["a"].data = weights["a"].data.view(8, 4)
            version = bounded(sender.send, timeout=tm.T, limit=tm.T + tm.SLACK, what="send after a's shape came back")
    except HarnessError as e:
        raise TooSlow(f"SEND-1 violated: {e}") from None
    finally:
        close(receiver, sender)


@pytest.mark.req("BAD-2", "BAD-4", "VER-2")
@pytest.mark.parametrize("kind", [pytest.param("module", marks=pytest.mark.needs("module")),
                                  pytest.param("mapping", marks=pytest.mark.needs("mapping"))])
def test_a_tensor_given_data_of_another_shape_is_refused_at_the_next_send(ws, kind):
    """The sender re-reads its weights object at each send (weights=None): after `t.data = x` on one of
    its tensors, with `x` of another shape and the same number of elements (one that a copy would
    even accept: (6,) into (1, 6)), the send raises WeightsMismatchError and publishes nothing,
    wherever `x` happens to live. The same tensor objects come again, so both a tensor below and
    one above the old storage's address are tried: a check keyed on remembered pointers cannot pass
    by luck. Once for a module's parameter, once for a tensor of a mapping."""
    weights = {"w": torch.arange(6, dtype=torch.float32).reshape(1, 6), "b": torch.ones(3)}
    if kind == "module":
        module = Module(weights)
        with torch.no_grad():
            module.w.copy_(weights["w"])
        source, w = module, lambda: module.w
    else:
        source, w = weights, lambda: weights["w"]
    sender, receiver, tx, rx = handshake(ws, source, zeros_like(weights))
    try:
        connected(ws, tx, rx)
        pool = [torch.full((6,), 7.0) for _ in range(64)]  # candidates on either side of the storage
        for side in ("below", "above"):
            good = torch.arange(6, dtype=torch.float32).reshape(1, 6) + len(side)
            w().data = good
            version = bounded(sender.send, timeout=tm.T, limit=tm.T + tm.SLACK, what="send of matching weights")
            ptr = w().data_ptr()
            chosen = [x for x in pool if (x.data_ptr() < ptr if side == "below" else x.data_ptr() > ptr)]
            if not chosen:
                continue  # the allocator put every candidate on one side: that side is not tried
            w().data = chosen[0]
            expect_error(ws, "WeightsMismatchError", sender.send, timeout=tm.T, ids="BAD-2",
                         what=f"a send after w.data became a (6,) tensor, {side} the old storage")
            assert sender.version == version, f"VER-2 violated: the refused send moved the version to {sender.version}"
    except HarnessError as e:
        raise TooSlow(f"SEND-1 violated: {e}") from None
    finally:
        close(receiver, sender)
