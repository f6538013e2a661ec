"""Spec 10.6, packed weights (API-8): one buffer, the same objects, the same bytes delivered."""

from __future__ import annotations

import pytest
import torch

from . import timing as tm
from .rig import expect_error, pair
from .verdict import TooSlow

pytestmark = pytest.mark.needs("pack")


class Net(torch.nn.Module):
    """Parameters of several dtypes and shapes, and a buffer: what a policy holds."""

    def __init__(self, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.a = torch.nn.Linear(5, 3)
        self.b = torch.nn.Parameter(torch.randn(7, generator=g, dtype=torch.float64))
        self.c = torch.nn.Parameter(torch.randn((), generator=g).to(torch.bfloat16))
        self.register_buffer("steps", torch.arange(3, dtype=torch.int64) + seed)
        with torch.no_grad():
            self.a.weight.copy_(torch.randn(3, 5, generator=g))
            self.a.bias.copy_(torch.randn(3, generator=g))

    def forward(self, x):
        return self.a(x).sum() + self.b.sum() + self.c.float()


def state(module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(
        a.detach().cpu().reshape(-1).view(torch.uint8), b.detach().cpu().reshape(-1).view(torch.uint8))


def sent(ws, sender, version: int, *args, **kwargs) -> None:
    """sender.send(...) to a healthy receiver returns `version` (SEND-1); a timeout is a matter of time."""
    try:
        got = sender.send(*args, timeout=tm.T, **kwargs)
    except ws.SyncTimeoutError as e:
        raise TooSlow(f"SEND-1 violated: a send to a healthy receiver timed out: {e}") from None
    assert got == version, f"VER-1 violated: send returned {got}, expected {version}"


@pytest.mark.req("API-8")
@pytest.mark.needs("module")
def test_pack_keeps_every_object_and_value_and_views_one_buffer(ws):
    net = Net(1)
    before = state(net)
    objects = {k: v for k, v in list(net.named_parameters()) + list(net.named_buffers())}
    packed = ws.pack(net)
    assert set(packed) == set(before), f"API-8 violated: pack() names {sorted(packed)}, the module {sorted(before)}"
    for name, t in packed.items():
        assert t is objects[name], f"API-8 violated: {name!r} is a new object after pack(); optimizers would lose it"
        assert same_bytes(t, before[name]), f"API-8 violated: pack() changed the value of {name!r}"
    assert isinstance(net.b, torch.nn.Parameter), "API-8 violated: a parameter stopped being a Parameter"
    storages = {t.untyped_storage().data_ptr() for t in packed.values()}
    assert len(storages) == 1, f"API-8 violated: the packed tensors view {len(storages)} buffers, not one"
    try:
        packed["b"] = torch.zeros(7)
    except TypeError:
        pass
    else:
        raise AssertionError("API-8 violated: the Packed mapping accepts item assignment; it is read-only")


@pytest.mark.req("API-8", "ACK-3")
@pytest.mark.needs("module", "push")
def test_packed_weights_deliver_what_unpacked_ones_would(ws):
    net, target = Net(2), Net(3)
    packed = ws.pack(net)
    sender, receiver = pair(ws, packed, target)
    try:
        opt = torch.optim.SGD(net.parameters(), lr=0.5)
        for v in range(1, 4):
            opt.zero_grad()
            net(torch.ones(2, 5)).sum().backward()
            net.b.grad = torch.ones_like(net.b)
            opt.step()  # in place: into the buffer
            with torch.no_grad():
                net.steps.add_(1)
            sent(ws, sender, v)
            want = state(net)
            got = state(target)
            for name, t in want.items():
                assert same_bytes(got[name], t), f"API-8, ACK-3 violated: after version {v}, {name!r} differs"
        # the weights of one send may be the Packed too, or the plain module it came from
        with torch.no_grad():
            net.b.mul_(2)
        sent(ws, sender, 4, net)
        assert same_bytes(state(target)["b"], net.b), "API-8 violated: a send of the packed module's object"
    finally:
        sender.close()
        receiver.close()


@pytest.mark.req("API-8", "BAD-2", "BAD-4")
@pytest.mark.needs("module", "push")
@pytest.mark.parametrize("how", ["data replaced", "resized", "data replaced, views kept since an earlier send",
                                 "a frozen parameter resized"])
def test_a_tensor_that_left_the_buffer_is_refused_before_any_byte_changes(ws, how):
    """A packed tensor whose .data was replaced, or which was resized, makes the next send raise
    WeightsMismatchError naming it, and the send after it too (a refusal leaves nothing behind that lets the
    same weights by, BAD-2.f); nothing is published, no byte of the receiver's changes. Also when the trainer
    keeps views of its packed weights made before an earlier send (`best = net.state_dict()`: spec 10.6 lets a
    re-homing go unnoticed only in the interval in which such a view was made), and for a parameter that
    requires no grad since packing (a frozen one: `resize_()` accepts it)."""
    net, target = Net(4), Net(5)
    if how == "a frozen parameter resized":
        net.b.requires_grad_(False)
    packed = ws.pack(net)
    sender, receiver = pair(ws, packed, target)
    kept = net.state_dict() if how.startswith("data replaced, views kept") else None  # views of the buffer
    try:
        with torch.no_grad():
            net.b.add_(1)
        sent(ws, sender, 1)
        with torch.no_grad():
            net.b.add_(1)
        sent(ws, sender, 2)
        held = state(target)
        if how.startswith("data replaced"):
            net.b.data = torch.full_like(net.b, 9.0)
        elif how == "a frozen parameter resized":
            net.b.resize_(6)
        else:
            net.steps.resize_(6)
        with torch.no_grad():
            net.a.bias.add_(1)  # in the buffer still: must not reach anyone either
        name = "steps" if how == "resized" else "b"
        for attempt in ("a send", "a second send"):  # a refusal remembers nothing that lets the next one by (BAD-2.f)
            e = expect_error(ws, "WeightsMismatchError", sender.send, timeout=tm.T, ids="API-8, BAD-2",
                             what=f"{attempt} after {name!r} was {how}")
            assert repr(name) in str(e) or f"'{name}'" in str(e) or name in str(e).split(), (
                f"BAD-2 violated: the error of {attempt} does not name {name!r}: {e}")
        assert sender.version == 2, f"BAD-4 violated: the refused send moved the version to {sender.version}"
        for k, t in state(target).items():
            assert same_bytes(t, held[k]), f"BAD-4 violated: the receiver's {k!r} changed after a refused send"
        assert receiver.version == 2, f"BAD-4 violated: the receiver's version is {receiver.version} after a refused send"
    finally:
        del kept
        sender.close()
        receiver.close()


class Tied(torch.nn.Module):
    """An embedding whose matrix the output layer shares (weight tying): one parameter under two names."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(5, 3)
        self.head = torch.nn.Linear(3, 5, bias=False)
        self.head.weight = self.emb.weight


@pytest.mark.req("API-8")
@pytest.mark.parametrize("kind", ["mapping", pytest.param("module", marks=pytest.mark.needs("module"))])
def test_tied_tensors_are_refused_and_nothing_moves(ws, kind):
    """One tensor under two names is refused with ValueError and nothing moves: in a mapping, and in a module
    that ties a parameter (whose state_dict, read detached, holds two tensor objects for it)."""
    if kind == "mapping":
        t = torch.arange(4.0)
        weights: object = {"x": t, "y": t}
    else:
        weights = Tied()
        t = weights.emb.weight
    ptr = t.data_ptr()
    try:
        ws.pack(weights)
    except ValueError:
        pass
    else:
        raise AssertionError(f"API-8 violated: pack() accepted two names for one tensor (a {kind})")
    assert t.data_ptr() == ptr, "API-8 violated: a refused pack() moved a tensor"


@pytest.mark.req("API-8", "ACK-3")
@pytest.mark.needs("module", "push")
def test_a_packed_target_receives_into_its_buffer(ws):
    net, target = Net(6), Net(7)
    packed_target = ws.pack(target)
    sender, receiver = pair(ws, net, packed_target)
    try:
        with torch.no_grad():
            net.b.add_(3)
        sent(ws, sender, 1)
        for name, t in state(net).items():
            assert same_bytes(packed_target[name], t), f"API-8, ACK-3 violated: the packed target's {name!r} differs"
            assert same_bytes(target.state_dict()[name], t), f"API-8 violated: the module does not show {name!r}"
    finally:
        sender.close()
        receiver.close()


@pytest.mark.req("API-8", "ACK-3", "INIT-3")
@pytest.mark.needs("push", "mapping")
@pytest.mark.parametrize("shapes", ["of other shapes", "all of one shape"])
def test_a_packed_target_laid_out_in_another_order_receives_each_array_by_name(ws, shapes):
    """A target packed from the weights' names, dtypes and shapes in another order (a worker model that registers
    its layers in another order) has each array at another offset of a buffer as large as the slot: each tensor
    must still receive its own array, matched by name (INIT-3), at the Init and at a send, not the bytes that lie
    at its offset in the slot. With arrays all of one shape (two biases, experts) the two layouts differ in their
    names alone: every offset, dtype and size is the slot's."""
    if shapes == "all of one shape":
        weights = {"a": torch.arange(6.0), "b": torch.arange(100.0, 106.0), "c": torch.full((6,), -1.0)}
    else:
        weights = {"a": torch.arange(6.0), "b": torch.arange(100.0, 112.0).reshape(3, 4), "c": torch.full((5,), -1.0)}
    target = ws.pack({n: torch.zeros_like(weights[n]) for n in reversed(list(weights))})
    sender, receiver = pair(ws, weights, target)
    try:
        for version, values in ((0, weights), (1, {n: t * 2 + 1 for n, t in weights.items()})):
            if version:
                sent(ws, sender, version, values)
            for name, t in values.items():
                assert same_bytes(target[name], t), (
                    f"API-8, ACK-3 violated: at version {version} the packed target's {name!r} (packed in another "
                    f"order than the weights) holds {target[name].flatten().tolist()}, not its own array "
                    f"{t.flatten().tolist()}")
    finally:
        sender.close()
        receiver.close()


@pytest.mark.req("API-8")
def test_distinct_tensors_are_not_tied_even_when_empty(ws):
    """Only one tensor under two names is tied (API-8): distinct tensors with no elements, which may all
    report the same data pointer, are packed like any others."""
    weights = {"a": torch.zeros(0), "b": torch.zeros(0, 3), "c": torch.arange(3.0)}
    try:
        packed = ws.pack(weights)
    except ValueError as e:
        raise AssertionError(f"API-8 violated: pack() refused distinct empty tensors as tied: {e}") from None
    assert all(packed[n] is t for n, t in weights.items()), "API-8 violated: pack() replaced a tensor object"
    assert torch.equal(packed["c"], torch.arange(3.0)), "API-8 violated: pack() changed a value"


@pytest.mark.req("API-8", "LAYOUT-3", "ACK-3")
@pytest.mark.needs("cast", "push", "mapping")
@pytest.mark.parametrize("sizes", [(8,), (16, 5, 3)], ids=["one-array", "three-arrays"])
def test_packed_weights_into_a_cast_slot_are_rounded_as_unpacked_ones_would_be(ws, sizes):
    """A packed fp32 trainer behind a receiver that asked for bf16 (dtypes=): after each send the receiver holds
    the trainer's weights rounded to bf16, as the unpacked weights would give it. With one array of 8 floats the
    fp32 buffer and the bf16 slot have the same size (64 bytes each), so only the dtypes tell them apart."""
    trainer = {f"w{i}": torch.zeros(n) for i, n in enumerate(sizes)}
    packed = ws.pack(trainer)
    target = {k: torch.zeros(v.shape, dtype=torch.bfloat16) for k, v in trainer.items()}
    sender, receiver = pair(ws, packed, target, dtypes=[torch.bfloat16])
    try:
        gen = torch.Generator().manual_seed(11)
        for v in range(1, 4):
            with torch.no_grad():
                for name in trainer:
                    packed[name].copy_(torch.randn(packed[name].shape, generator=gen) * 10 ** v)  # into the buffer
            sent(ws, sender, v)
            with receiver.reading(tm.SHORT):
                for name in trainer:
                    assert same_bytes(target[name], packed[name].to(torch.bfloat16)), (
                        f"API-8, LAYOUT-3 violated: after version {v} the bf16 receiver's {name!r} is not the packed "
                        f"trainer's fp32 weights rounded to bf16")
    finally:
        sender.close()
        receiver.close()


@pytest.mark.req("API-8", "ACK-7", "INIT-3")
@pytest.mark.needs("module", "push")
def test_a_packed_target_whose_tensor_changed_shape_refuses_the_apply(ws):
    """A receiver into a packed module whose caller then gave one parameter another shape through `.data`: the
    next send is answered Ack(error) (the send raises ReceiverError naming it) and no byte of the target changes,
    the tensors that still view the buffer included (ACK-7)."""
    net, target = Net(8), Net(9)
    packed_target = ws.pack(target)
    sender, receiver = pair(ws, net, packed_target)
    try:
        target.b.data = torch.zeros(target.b.numel() + 1, dtype=target.b.dtype)  # no longer fits version 1
        before = state(target)
        with torch.no_grad():
            net.a.weight.add_(1)
            net.b.add_(1)
        expect_error(ws, "ReceiverError", sender.send, timeout=tm.T, ids="ACK-7", naming=[0],
                     what="send to a packed target whose tensor was given another shape")
        after = state(target)
        changed = [k for k in before if not same_bytes(before[k], after[k])]
        assert not changed, f"ACK-7 violated: the refused apply wrote {changed} of the packed target"
    finally:
        sender.close()
        receiver.close()


@pytest.mark.req("SEC-7")
def test_pack_refuses_weights_whose_init_would_not_fit_in_one_frame(ws):
    """SEC-7: pack() refuses, when it packs, what a Sender of the same weights would refuse: here 16,500 names of
    4,096 bytes, an Init over the 64 MiB frame bound (WIRE-2), with ValueError; nothing is left to fail later."""
    huge = {f"{i:05d}" + "x" * 4091: torch.zeros(0) for i in range(16_500)}
    try:
        ws.pack(huge)
    except ValueError:
        return
    raise AssertionError("SEC-7 violated: pack() accepted 16,500 names of 4,096 bytes (an Init over 64 MiB), which "
                         "no sender can carry; it must raise ValueError when it packs")
