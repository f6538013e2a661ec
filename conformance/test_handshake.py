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
from .rig import Background, expect_error, expect_remote_error, spec_of, waited
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
    refusal_fits(ws, {name: torch.zeros(3)}, {name: torch.zeros(4)}, "WIRE-3",
                 "the receiver's refusal broke the wire (a detail over 4,096 bytes?)")


def refusal_fits(ws, weights: dict, target: dict, wire_ids: str, broke: str) -> None:
    """A handshake whose target does not match: the receiver's Ready(error) reaches the sender as its refusal,
    cause 'error' (INIT-3), not as a violation of the wire (`wire_ids`: `broke` says how), and the receiver's
    connect raises WeightsMismatchError."""
    sender, receiver, tx, rx = handshake(ws, weights, target)
    try:
        if tx[0] == "hang":
            raise TooSlow(f"INIT-5 violated: {tx[1]}")
        status, e = tx
        assert status == "err" and isinstance(e, ws.ReceiverError) and 0 in getattr(e, "workers", ()), (
            f"INIT-3 violated: sender.connect with a mismatching target gave {tx!r:.300}")
        cause = getattr(e, "causes", {}).get(0)
        assert cause != "violation", f"{wire_ids} violated: {broke}: {str(e)[:300]}"
        assert cause == "error", f"INIT-3 violated: the refusal reached the sender as {cause!r}, not 'error': {e}"
        assert rx[0] == "err" and isinstance(rx[1], ws.WeightsMismatchError), (
            f"INIT-3 violated: receiver.connect with a mismatching target gave {rx!r:.300}")
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
    wherever `x` happens to live, and so does a second send of the same weights (BAD-2.f: a refusal leaves
    nothing behind that lets the next send by). The same tensor objects come again, so both a tensor below and
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
            for attempt in ("a send", "a second send"):  # a refusal remembers nothing that lets the next one by
                expect_error(ws, "WeightsMismatchError", sender.send, timeout=tm.T, ids="BAD-2",
                             what=f"{attempt} after w.data became a (6,) tensor, {side} the old storage")
            assert sender.version == version, f"VER-2 violated: the refused send moved the version to {sender.version}"
    except HarnessError as e:
        raise TooSlow(f"SEND-1 violated: {e}") from None
    finally:
        close(receiver, sender)


class _TiedPolicy(torch.nn.Module):
    """A policy whose state_dict is not "parameters plus buffers": an output layer tied to its embedding (one
    tensor under two names), batch-norm buffers, and a non-persistent buffer (a cache kept out of checkpoints)."""

    def __init__(self, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.embed = torch.nn.Embedding(5, 4)
        self.head = torch.nn.Linear(4, 5, bias=False)
        self.head.weight = self.embed.weight
        self.norm = torch.nn.BatchNorm1d(4)
        self.register_buffer("cache", torch.full((3,), -float(seed)), persistent=False)
        with torch.no_grad():
            for t in self.state_dict(keep_vars=True).values():
                if t.dtype.is_floating_point:
                    t.copy_(torch.randn(t.shape, generator=g))


@pytest.mark.req("API-3", "INIT-3", "ACK-3")
@pytest.mark.needs("module", "push")
def test_a_module_target_is_its_state_dict_tied_and_unsaved_tensors_included(ws):
    """A module target's entries are its state_dict's, as a sender's are (API-3.q): a policy with a parameter tied
    under two names and a non-persistent buffer connects to a sender made from the same class (named_parameters()
    would give the tied tensor one name, named_buffers() would add the unsaved cache), and after a send each of
    its state_dict entries holds the sender's values, the tied pair included; the unsaved cache is left alone."""
    source, target = _TiedPolicy(1), _TiedPolicy(2)
    sender, receiver, tx, rx = handshake(ws, source, target)
    try:
        if rx[0] == "err" and isinstance(rx[1], ws.WeightsMismatchError):
            raise AssertionError(f"API-3 violated: a module target of the sender's own class was refused at connect: "
                                 f"{rx[1]}; a module's entries are its state_dict's (tied names and all, no "
                                 "non-persistent buffer)")
        connected(ws, tx, rx)
        with torch.no_grad():
            for t in source.state_dict(keep_vars=True).values():
                if t.dtype.is_floating_point:
                    t.add_(1.0)
        v = bounded(sender.send, timeout=tm.T, limit=tm.T + tm.SLACK, what="send of the module")
        with receiver.reading(tm.T):
            got = {n: t.clone() for n, t in target.state_dict().items()}
            cache = target.cache.clone()
            names = sorted(receiver.weights)
        want = source.state_dict()
        assert receiver.version == v, f"ACK-3 violated: the receiver holds {receiver.version}, {v} was acked"
        assert names == sorted(want), (f"API-3 violated: the receiver's weights are {names}, not its module target's "
                                       f"state_dict entries {sorted(want)}")
        wrong = [n for n in want if not torch.equal(got[n], want[n])]
        assert not wrong, f"ACK-3 violated: after version {v} the module target's {wrong} differ from the sender's"
        assert torch.equal(cache, torch.full((3,), -2.0)), (
            f"API-3 violated: the target's non-persistent buffer, in no manifest, was written: {cache.tolist()}")
    except HarnessError as e:
        raise TooSlow(f"SEND-1 violated: {e}") from None
    finally:
        close(receiver, sender)


# ---- a scripted trainer against the binding's Receiver, in this process ---------------------------------------


class _Joined:
    """A ScriptedSender (conformance/peers.py) and the binding's Receiver joining it by URL in this process, its
    connect() in a thread: the test writes the Init by hand, and may spoil it."""

    def __init__(self, ws, rid: int = 1, mode: str = "push"):
        from .peers import ScriptedSender

        lacking(ws, mode)
        self.ws, self.rid = ws, rid
        self.sender = ScriptedSender()
        self.session = None
        self.box: dict = {}
        self.rx = ws.Receiver(self.sender.url(rid), mode=mode)

        def run():
            try:
                self.box["rx"] = ("ok", self.rx.connect(tm.T))
            except Exception as e:  # noqa: BLE001 - the test looks at it
                self.box["rx"] = ("err", e)

        self.thread = threading.Thread(target=run, name="conformance-receiver-connect", daemon=True)
        self.thread.start()
        self.session = self.sender.accept(tm.T)

    def init(self, *, version: int = 5, protocol: str = "1.1", receiver=None, dtype: str = "float32",
             slot_nbytes=None, buffer_nbytes=None) -> dict:
        """Sends Init of one array "w" (4 float32s at offset 0) in one slot; returns the answer's frame, or a
        note of what came instead."""
        from .peers import PeerClosed, init, layout, slotinfo

        raw = torch.arange(4, dtype=torch.float32).numpy().tobytes()
        manifest, data, nbytes = layout([("w", "float32", (4,), raw)])
        manifest[0]["dtype"] = dtype
        fd = self.sender.slot(0, data, nbytes if buffer_nbytes is None else buffer_nbytes)
        msg = init(self.rid if receiver is None else receiver, manifest,
                   [slotinfo(0, nbytes if slot_nbytes is None else slot_nbytes)], version, 0, protocol=protocol)
        self.session.send(msg, fds=[fd])
        try:
            answer, _ = self.session.recv_past_heartbeats(tm.REACTION + tm.SLACK)
        except HarnessError:
            return {"type": "nothing within the reaction bound"}
        except (PeerClosed, ConnectionResetError):
            return {"type": "the end of the channel"}
        return answer

    def outcome(self):
        self.thread.join(tm.T + tm.SLACK)
        in_time("rx" in self.box, f"INIT-5 violated: receiver.connect({tm.T:g}) did not return within "
                                  f"{tm.T + tm.SLACK:g} s")
        return self.box["rx"]

    def close(self) -> None:
        close(self.rx)
        if self.session is not None:
            self.session.close()
        self.sender.close()


def _remote_protocol_error_fields(ws, e, what: str) -> None:
    """API-4: a RemoteProtocolError carries .state, .event and .requirement, the last an ID of the spec."""
    import re

    from .names import SPEC_DIR
    from .verdict import ID

    state, event, req = (getattr(e, k, None) for k in ("state", "event", "requirement"))
    assert isinstance(state, str) and isinstance(event, str) and state and event, (
        f"API-4 violated: {what}: RemoteProtocolError.state is {state!r} and .event {event!r}; both name what "
        "happened")
    known = {m for p in SPEC_DIR.glob("*.md") for m in re.findall(r'<a id="([A-Z0-9-]+)"></a>', p.read_text())}
    assert isinstance(req, str) and re.fullmatch(ID, req) and req in known, (
        f"API-4 violated: {what}: RemoteProtocolError.requirement is {req!r}, not the ID of a requirement")


@pytest.mark.req("INIT-2", "INIT-6", "WIRE-8", "MSG-2", "API-3", "API-4")
@pytest.mark.needs("rendezvous", "wire", "push")
@pytest.mark.parametrize("case", ["protocol 2.0", "another receiver id", "a dtype nobody knows",
                                  "an entry ending past its slot", "a slot buffer shorter than its nbytes"])
def test_an_init_the_receiver_cannot_take_ends_its_connect_with_the_right_error(ws, case):
    """A scripted trainer's Init of another major version, or naming another receiver, ends receiver.connect()
    with RemoteProtocolError (INIT-2, MSG-2), which carries state, event and the ID broken (API-4); one that is
    well formed but asks what the receiver cannot do (a dtype it does not know, an entry past the end of its
    slot, a slot buffer shorter than its SlotInfo.nbytes) is answered Ready(error, detail), and connect() raises
    ReceiverError naming the receiver's own id with the Init's version (INIT-6). Nothing is applied."""
    j = _Joined(ws, rid=1)
    try:
        kw = {"protocol 2.0": {"protocol": "2.0"}, "another receiver id": {"receiver": 2},
              "a dtype nobody knows": {"dtype": "float7"}, "an entry ending past its slot": {"slot_nbytes": 8},
              "a slot buffer shorter than its nbytes": {"slot_nbytes": 128, "buffer_nbytes": 64}}[case]
        answer = j.init(version=5, **kw)
        status, e = j.outcome()
        if case in ("protocol 2.0", "another receiver id"):
            ids = "INIT-2" if case == "protocol 2.0" else "MSG-2"
            if case == "protocol 2.0":
                assert answer.get("type") == "Ready" and answer.get("status") == "error" and answer.get("detail"), (
                    f"INIT-2 violated: an Init of protocol 2.0 was answered {answer}, not Ready(error, detail)")
            in_time(not (status == "err" and isinstance(e, ws.SyncTimeoutError)),
                    f"{ids} violated: receiver.connect() timed out on an Init of {case} ({e})")
            assert status == "err" and isinstance(e, ws.RemoteProtocolError), (
                f"{ids}, API-3 violated: receiver.connect() given an Init of {case} gave {e!r}, not "
                "RemoteProtocolError (the peer speaks another protocol)")
            _remote_protocol_error_fields(ws, e, f"receiver.connect() given an Init of {case}")
        else:
            in_time(answer.get("type") != "nothing within the reaction bound",
                    f"INIT-6 violated: an Init with {case} got no answer within {tm.REACTION + tm.SLACK:g} s")
            assert answer.get("type") == "Ready" and answer.get("status") == "error" and answer.get("detail"), (
                f"INIT-6 violated: an Init with {case} was answered {answer}, not Ready(error, detail)")
            assert answer.get("receiver") == 1, f"INIT-6 violated: the Ready(error) to an Init for receiver 1 is {answer}"
            in_time(not (status == "err" and isinstance(e, ws.SyncTimeoutError)),
                    f"INIT-6 violated: receiver.connect() timed out on an Init with {case} ({e})")
            if case == "a dtype nobody knows":  # the wire answer is what INIT-6 and WIRE-8 fix for this one here
                assert status == "err" and isinstance(e, ws.WeightSyncError), (
                    f"INIT-6 violated: receiver.connect() given an Init with {case} gave {e!r}")
            else:
                assert status == "err" and isinstance(e, ws.ReceiverError) and not isinstance(e, ws.ReceiverDiedError), (
                    f"INIT-6 violated: receiver.connect() given an Init with {case} gave {e!r}, not ReceiverError")
                assert e.workers == [1] and e.version == 5 and e.details.get(1), (
                    f"INIT-6 violated: the receiver's ReceiverError names {e.workers}, version {e.version}, details "
                    f"{e.details}; expected [1], the Init's version 5, and why")
        assert j.rx.version is None and j.rx.stopped is True, (
            f"INIT-6 violated: after refusing an Init with {case} the receiver holds version {j.rx.version}, "
            f"stopped={j.rx.stopped}")
    finally:
        j.close()


@pytest.mark.req("CON-1", "LIFE-7", "SM-R-3", "SM-R-7", "API-3", "API-4")
@pytest.mark.needs("rendezvous", "wire", "push")
@pytest.mark.parametrize("end", ["the trainer hangs up", "the trainer breaks the protocol"])
def test_a_push_receiver_stops_when_its_trainer_hangs_up_or_breaks_the_protocol(ws, end):
    """A connected push receiver, idle: the scripted trainer's end of the channel closing with no Stop turns
    `stopped` true within the reaction bound (CON-1, LIFE-7), keeping the version it holds; a Receive naming a
    slot never introduced (SLOT-1) stops it too, and `failure` is then the RemoteProtocolError, with its state,
    event and ID (API-3, API-4)."""
    import time

    j = _Joined(ws, rid=0)
    try:
        answer = j.init(version=3)
        status, v = j.outcome()
        if status == "err" and isinstance(v, ws.SyncTimeoutError) or answer.get("type") != "Ready":
            raise TooSlow(f"INIT-4 violated: the handshake with a scripted trainer did not complete: {answer}, {v!r}")
        assert (status, v) == ("ok", 3) and answer.get("status") == "ok", (
            f"INIT-4 violated: a good Init of version 3 gave Ready {answer} and connect() {v!r}")
        if end == "the trainer hangs up":
            j.session.close()
            j.session = None
        else:
            j.session.send({"type": "Receive", "version": 4, "slot": 9, "new_slots": []})
        t0 = time.monotonic()
        limit = tm.REACTION + tm.SLACK
        while not j.rx.stopped and time.monotonic() - t0 < limit:
            time.sleep(0.01)
        ids = "CON-1, LIFE-7" if end == "the trainer hangs up" else "SM-R-7"
        in_time(j.rx.stopped, f"{ids} violated: a push receiver still says stopped=False {limit:g} s after {end}")
        assert j.rx.version == 3, f"SM-R-3 violated: after {end} the receiver holds {j.rx.version}, not 3"
        if end == "the trainer breaks the protocol":
            failure = j.rx.failure
            assert isinstance(failure, ws.RemoteProtocolError), (
                f"API-3 violated: the failure of a push receiver stopped by its trainer's violation is {failure!r}, "
                "not the RemoteProtocolError that stopped it")
            _remote_protocol_error_fields(ws, failure, "receiver.failure after a Receive naming a slot never "
                                                       "introduced")
    finally:
        j.close()


@pytest.mark.req("INIT-2", "INIT-5", "SEND-7")
@pytest.mark.needs("wire")
def test_a_ready_error_in_another_major_version_is_a_refusal_the_sender_names(ws):
    """A receiver refusing its Init for its major version answers Ready(error) in its own protocol (2.0): the
    sender's connect() raises ReceiverError naming it with cause "error" and its detail, within the reaction
    bound, as for any Ready(error) (INIT-2), rather than cutting it off as a violation."""
    from .peers import ScriptedReceiver, ready

    sender = ws.Sender(basic(0), 2)
    peer = None
    try:
        peer = ScriptedReceiver(sender.handle(0), 0)
        connecting = Background(lambda: sender.connect(4 * (tm.REACTION + tm.SLACK), workers=[0]),
                                "conformance-sender-connect")
        peer.handshake(answer=False, bound=tm.T)
        detail = "this receiver speaks protocol 2.0, not 1.x"
        peer.send({**ready(0, None, "error", detail), "protocol": "2.0"})
        outcome = connecting.join(tm.REACTION + tm.SLACK)
        in_time(outcome is not None, f"INIT-2, INIT-5 violated: sender.connect() had not returned "
                                     f"{tm.REACTION + tm.SLACK:g} s after receiver 0 answered Ready(error) in protocol 2.0")
        status, e = outcome
        assert status == "err" and isinstance(e, ws.ReceiverError), (
            f"INIT-2 violated: sender.connect() with receiver 0 refusing in protocol 2.0 gave {e!r}, not ReceiverError")
        assert e.workers == [0] and e.causes == {0: "error"}, (
            f"INIT-2 violated: the refusal in protocol 2.0 was named as {e.causes} (receivers {e.workers}); a "
            "Ready(error) is the cause 'error', whatever protocol it names")
        assert detail in e.details.get(0, ""), f"INIT-2 violated: the receiver's detail is not in {e.details}"
    finally:
        if peer is not None:
            peer.close()
        close(sender)


def _misnamed(weights: dict, case: str) -> dict:
    target = zeros_like(weights)
    if case == "a name missing":
        del target["b"]
    elif case == "a sparse entry":  # dtype and shape right, layout not dense (8.3)
        target["w"] = target["w"].to_sparse()
    else:
        target["extra"] = torch.zeros(2)
    return target


@pytest.mark.req("INIT-3", "INIT-5")
@pytest.mark.parametrize("case", ["a name missing", "a name the manifest lacks", "a sparse entry"])
def test_a_target_whose_names_differ_is_refused_at_connect(ws, case):
    """The target check at connect covers the names exactly (one missing, one more) and the layout (a sparse entry
    of the right dtype and shape), not only dtypes and shapes: receiver.connect raises WeightsMismatchError and
    sender.connect ReceiverError naming it."""
    weights = basic(0)
    target = _misnamed(weights, case)
    sender, receiver, tx, rx = handshake(ws, weights, target, timeout=3 * tm.T, limit=tm.T)
    try:
        status, e = tx
        in_time(status != "hang" and not isinstance(e, ws.SyncTimeoutError),
                f"INIT-3, INIT-5 violated: sender.connect with a target with {case} did not end in time: {e}")
        assert status == "err" and isinstance(e, ws.ReceiverError) and e.workers == [0], (
            f"INIT-3 violated: sender.connect with a target with {case} gave {e!r}, not ReceiverError naming 0")
        status, err = rx
        assert status == "err" and isinstance(err, ws.WeightsMismatchError), (
            f"INIT-3 violated: receiver.connect with a target with {case} gave {err!r}, not WeightsMismatchError")
        assert receiver.version is None, f"INIT-3 violated: the refused receiver holds version {receiver.version}"
    finally:
        close(receiver, sender)


@pytest.mark.req("API-2", "API-3")
@pytest.mark.needs("mapping")
def test_send_without_weights_rereads_them_and_negative_timeouts_are_refused(ws):
    """send() with weights=None publishes the sender's own object as it is now (updated in place since); a
    negative timeout raises ValueError from connect, wait, drop (where declared) and reading, and changes
    nothing."""
    src = basic(0)
    lacking(ws, "push")
    sender = ws.Sender(src, 1)
    target = zeros_like(src)
    receiver = ws.Receiver(sender.handle(0), target, mode="push")
    try:
        t = threading.Thread(target=lambda: receiver.connect(tm.T), daemon=True)
        t.start()
        bounded(sender.connect, tm.T, limit=tm.T + tm.SLACK, what="sender.connect")
        t.join(tm.T)
        with torch.no_grad():
            for v in src.values():
                if v.dtype.is_floating_point:
                    v.add_(1.5)
                elif v.dtype == torch.bool:
                    v.logical_not_()
                else:
                    v.add_(7)
        want = describe(src)
        f = sender.send_async(timeout=tm.T)
        calls = [("sender.connect(-1)", lambda: sender.connect(-1)), ("future.wait(-1)", lambda: f.wait(-1))]
        if "drop" in ws.CAPABILITIES:
            calls.append(("sender.drop(0, timeout=-1)", lambda: sender.drop(0, timeout=-1)))

        def read():
            with receiver.reading(-1):
                pass

        calls.append(("receiver.reading(-1)", read))
        for what, fn in calls:
            try:
                bounded(fn, limit=tm.SLACK, what=what)
            except ValueError:
                continue
            except HarnessError as e:
                raise TooSlow(f"API-2 violated: {e}") from None
            except Exception as e:  # noqa: BLE001
                raise AssertionError(f"API-2 violated: {what} raised {type(e).__name__}: {e}, not ValueError") from None
            raise AssertionError(f"API-2 violated: {what} was accepted; a negative timeout raises ValueError")
        waited(f, "API-2")
        with receiver.reading(tm.T):
            got = describe(receiver.weights)
        assert got == want, ("API-2 violated: send() without weights did not publish the sender's own weights as "
                             "updated in place since it was made")
    finally:
        close(receiver, sender)


@pytest.mark.req("API-1", "API-2", "INIT-5", "LIFE-2")
@pytest.mark.needs("wire", "push")
def test_connect_again_waits_for_the_rest_and_leaves_a_live_one_and_a_new_handle_ends_the_old_channel(ws):
    """connect() without workers: scripted receiver 0 refuses its Init while receiver 1 (the binding's, not yet
    connecting) holds its Init unanswered, so connect() raises ReceiverError naming 0; connect() again waits for
    receiver 1 and returns once it is live (a send to it then works), and names 0 no more. connect(workers=[1])
    of the live receiver 1 leaves it as it is. handle(0), receiver 0 failed but its process still running, ends
    the old channel (LIFE-2)."""
    from .peers import ScriptedReceiver, ready

    sender = ws.Sender(basic(0), 2)
    peer = rx1 = None
    try:
        peer = ScriptedReceiver(sender.handle(0), 0)
        rx1 = ws.Receiver(sender.handle(1), mode="push")
        connecting = Background(lambda: sender.connect(4 * (tm.REACTION + tm.SLACK)), "conformance-sender-connect")
        peer.handshake(answer=False, bound=tm.T)
        peer.send(ready(0, None, "error", "this receiver refuses"))
        outcome = connecting.join(tm.REACTION + tm.SLACK)
        in_time(outcome is not None, "INIT-5 violated: connect() did not end after receiver 0 refused its Init")
        status, e = outcome
        assert status == "err" and isinstance(e, ws.ReceiverError) and e.workers == [0], (
            f"INIT-5 violated: connect() with receiver 0 refusing gave {e!r}, not ReceiverError naming 0")
        got: dict = {}
        t1 = threading.Thread(target=lambda: got.setdefault("v", rx1.connect(tm.T)), daemon=True)
        t1.start()
        try:
            bounded(sender.connect, tm.T, limit=tm.T + tm.SLACK, what="connect() again, receiver 1 still connecting")
        except HarnessError as err:
            raise TooSlow(f"API-1 violated: {err}") from None
        except ws.SyncTimeoutError as err:
            raise TooSlow(f"INIT-4 violated: receiver 1's handshake did not complete: {err}") from None
        except ws.WeightSyncError as err:
            raise AssertionError(f"API-1 violated: connect() again, after it raised for receiver 0, raised "
                                 f"{type(err).__name__}: {err}; it waits for the others (receiver 0 was named "
                                 "once)") from None
        try:
            f = sender.send_async(basic(1), workers=[1], timeout=tm.T)
        except ws.WeightSyncError as err:
            raise AssertionError(f"API-1 violated: connect() returned while receiver 1 was not live yet: a send to "
                                 f"it raised {type(err).__name__}: {err}") from None
        waited(f, "API-1")
        try:
            bounded(sender.connect, tm.T, workers=[1], limit=tm.T + tm.SLACK, what="connect(workers=[1]), 1 live")
        except HarnessError as err:
            raise TooSlow(f"API-1 violated: {err}") from None
        except ws.WeightSyncError as err:
            raise AssertionError(f"API-1 violated: connect(workers=[1]) of live receiver 1 raised "
                                 f"{type(err).__name__}: {err}") from None
        waited(sender.send_async(basic(2), workers=[1], timeout=tm.T), "API-1")
        assert not rx1.stopped and rx1.version == 2, (
            f"API-1 violated: after connect(workers=[1]) of live receiver 1 it shows stopped={rx1.stopped}, version "
            f"{rx1.version}, not live at 2")
        sender.handle(0)  # receiver 0 failed; its process (here, the scripted peer) still holds the old channel
        in_time(peer.closed_by_peer(tm.REACTION + tm.SLACK), "LIFE-2 violated: the old channel of failed receiver 0 "
                                                             "stayed open after handle(0) issued a new one")
    finally:
        if peer is not None:
            peer.close()
        close(rx1, sender)
