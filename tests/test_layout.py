"""Naming, checking and packing weights into slots (no processes)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tensordict import TensorDict
from torch import nn

from weightsync import WeightsMismatchError, layout
from weightsync.layout import ALIGN, Checker, Packer, dtype_of, flatten, make_manifest, slot_nbytes, views

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int64, torch.int8, torch.uint8, torch.bool]


def test_offsets_are_aligned_and_in_order():
    """LAYOUT-1."""
    flat = {"a": torch.zeros(3, dtype=torch.int8), "b": torch.zeros(5), "c": torch.zeros((), dtype=torch.float64),
            "d": torch.zeros(0, 4)}
    manifest = make_manifest(flat)
    assert [e.name for e in manifest] == list(flat)
    assert all(e.offset % ALIGN == 0 for e in manifest)
    ends = [e.offset + e.nbytes for e in manifest]
    assert all(ends[i] <= manifest[i + 1].offset for i in range(len(manifest) - 1))
    assert slot_nbytes(manifest, "cpu") % ALIGN == 0 and slot_nbytes(manifest, "cpu") >= ends[-1]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 0, 2), (2, 3, 5)])
def test_views_round_trip_every_dtype_and_shape(dtype, shape):
    """LAYOUT-1, ROLE-3: 0-d and empty arrays included."""
    src = (torch.arange(max(1, torch.Size(shape).numel())) % 2).to(dtype)[: torch.Size(shape).numel()].reshape(shape)
    flat = {"pad": torch.ones(3, dtype=torch.int8), "x": src}
    manifest = make_manifest(flat)
    buf = torch.zeros(slot_nbytes(manifest, "cpu"), dtype=torch.uint8)
    out = views(buf, manifest)
    for v, t in zip(out, flat.values()):
        v.copy_(t)
    again = views(buf, manifest)
    assert again[1].dtype == dtype and again[1].shape == shape and torch.equal(again[1], src)


def test_flatten_module_detaches_and_keeps_buffers():
    """API-1: a module's state_dict, parameters detached; a receiver keeps the Parameter objects."""
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    flat = flatten(m)
    assert set(flat) == set(m.state_dict())
    assert not any(t.requires_grad for t in flat.values())
    kept = flatten(m, detach=False)
    assert kept["0.weight"] is m[0].weight


def test_flatten_tensordict_and_duplicates():
    """BAD-1: nested keys flatten to dotted names; a collision is an error."""
    td = TensorDict({"a": {"b": torch.zeros(1)}, "c": torch.zeros(2)}, [])
    assert set(flatten(td)) == {"a.b", "c"}
    with pytest.raises(WeightsMismatchError, match="duplicate"):
        flatten(TensorDict({"a": {"b": torch.zeros(1)}, "a.b": torch.zeros(1)}, []))


def test_flatten_rejects_other_types():
    with pytest.raises(TypeError):
        flatten([torch.zeros(1)])
    with pytest.raises(WeightsMismatchError):
        flatten({1: torch.zeros(1)})


def test_checker_lists_every_problem():
    """BAD-1, BAD-2: the message names the entries and both values."""
    checker = Checker(make_manifest({"a": torch.zeros(2), "b": torch.zeros(3, dtype=torch.int64)}))
    with pytest.raises(WeightsMismatchError) as info:
        checker.ordered({"a": torch.zeros(2, dtype=torch.float64), "b": torch.zeros(4, dtype=torch.int64)})
    msg = str(info.value)
    assert "'a' is float64[2]" in msg and "expected float32[2]" in msg and "'b' is int64[4]" in msg
    with pytest.raises(WeightsMismatchError, match=r"missing \['b'\]; unknown \['c'\]"):
        checker.ordered({"a": torch.zeros(2), "c": torch.zeros(3)})


def test_checker_requires_grad_policy():
    """BAD-3: refused from a sender's mapping, allowed for a receiver's own parameters."""
    checker = Checker(make_manifest({"a": torch.zeros(2)}))
    t = torch.zeros(2, requires_grad=True)
    with pytest.raises(WeightsMismatchError, match="BAD-3"):
        checker.ordered({"a": t})
    assert checker.ordered({"a": t}, allow_grad=True)[0] is t
    with pytest.raises(WeightsMismatchError, match="BAD-3"):
        make_manifest({"a": t})


# Shapes that share an element count with others: size-0 and size-1 dimensions in every place.
_RESHAPES = [(), (1,), (0,), (2, 0), (0, 2), (1, 0), (6,), (6, 1), (1, 6), (2, 3), (3, 2), (1, 2, 3), (3, 1, 2),
             (32,), (4, 8), (8, 4), (1, 32), (32, 1), (9,), (3, 3), (1, 3, 3), (3, 3, 1)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_RESHAPES), min_size=1, max_size=5), st.data())
def test_checker_accepts_a_tensor_exactly_when_its_shape_is_the_entrys(shapes, data):
    """BAD-2: the check reads dtype, device, element count and strides in bulk; whatever a tensor's strides
    (a transposed view passes), it is accepted exactly when its shape is its entry's, and a tensor of the
    same elements in another shape (size-0 and size-1 dimensions moved included) is refused by name."""
    flat = {f"t{i}": torch.zeros(shape) for i, shape in enumerate(shapes)}
    checker = Checker(make_manifest(flat))
    assert all(a is b for a, b in zip(checker.ordered(flat), flat.values()))
    i = data.draw(st.integers(0, len(shapes) - 1))
    other = data.draw(st.sampled_from([s for s in _RESHAPES if math.prod(s) == math.prod(shapes[i])]))
    t = torch.zeros(other[::-1]).T if len(other) == 2 and data.draw(st.booleans()) else torch.zeros(other)
    changed = {**flat, f"t{i}": t}
    if tuple(t.shape) == shapes[i]:
        assert checker.ordered(changed)[i] is t
    else:
        with pytest.raises(WeightsMismatchError, match=rf"'t{i}' is float32\[.*BAD-2"):
            checker.ordered(changed)
    assert all(a is b for a, b in zip(checker.ordered(flat), flat.values()))  # the old tensors pass again


def _outcome(check, flat, allow_grad):
    """The tensors a fast path lets through, or "full": None and these errors both send ordered() to the full check."""
    try:
        out = check(flat, allow_grad)
    except (KeyError, AttributeError, TypeError, RuntimeError):
        return "full"
    return "full" if out is None else [id(t) for t in out]


_ODD = [lambda t: t.double(), lambda t: t.T if t.dim() == 2 else t.unsqueeze(0), lambda t: t.requires_grad_(),
        lambda t: torch.empty(t.shape, device="meta"), lambda t: t.to_sparse() if t.dim() else t, lambda t: t.tolist(),
        lambda t: t.reshape(-1), lambda t: torch.zeros(t.numel() + 1), lambda t: t]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_RESHAPES), min_size=1, max_size=6), st.data())
def test_the_checkers_two_fast_paths_agree(shapes, data):
    """The checker reads a few tensors one by one (`_each`) and many in one pass per property (`_bulk`): for any
    weights, a tensor changed in dtype, shape, strides, layout, device or requires_grad, or a value that is not a
    tensor, a name missing or added, both give the same answer, for a sender's weights and for a target."""
    flat = {f"t{i}": torch.zeros(shape) for i, shape in enumerate(shapes)}
    manifest = make_manifest(flat)
    i = data.draw(st.integers(0, len(shapes) - 1))
    changed = dict(flat)
    changed[f"t{i}"] = data.draw(st.sampled_from(_ODD))(torch.zeros(shapes[i]))
    names = data.draw(st.sampled_from(["as they are", "one missing", "one added"]))
    if names == "one missing":
        changed.pop(f"t{data.draw(st.integers(0, len(shapes) - 1))}")
    elif names == "one added":
        changed["extra"] = torch.zeros(1)
    for target in (False, True):
        checker = Checker(manifest, target=target)
        for weights in (flat, changed):
            for allow_grad in (False, True):
                assert _outcome(checker._each, weights, allow_grad) == _outcome(checker._bulk, weights, allow_grad)
    assert _outcome(Checker(manifest)._each, flat, False) == [id(t) for t in flat.values()]


def test_checker_after_forget_reads_every_shape():
    """A copy that failed on a tensor the bulk pass let through asks for a full check: it passes when
    nothing is wrong, so the copy's own error is what the caller sees."""
    flat = {"a": torch.zeros(2, 3), "b": torch.zeros(4)}
    checker = Checker(make_manifest(flat))
    checker.forget()
    assert [t.shape for t in checker.ordered(flat)] == [(2, 3), (4,)]
    checker.forget()
    with pytest.raises(WeightsMismatchError, match="BAD-2"):
        checker.ordered({"a": torch.zeros(3, 2), "b": torch.zeros(4)})


# Shapes whose float32 size is a multiple of ALIGN (they chain into runs) and shapes that are not.
_SHAPES = [(), (0,), (1,), (3,), (16,), (4, 8), (32,), (2, 0), (5, 16), (3, 3)]


@pytest.mark.parametrize("gather_below", [layout._GATHER_BELOW, 1, 64])
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_SHAPES), st.sampled_from(DTYPES[:5]), st.booleans()), max_size=12))
def test_packer_writes_what_per_tensor_copies_write(gather_below, specs):
    """LAYOUT-2: the batched write puts every byte where a copy per tensor would, padding untouched; also
    where runs of large arrays are left to copy_ (a bound that once dropped every array of such a run but
    its first is lowered here so that these small arrays count as large)."""
    import unittest.mock

    with unittest.mock.patch.object(layout, "_GATHER_BELOW", gather_below), \
            unittest.mock.patch.object(layout, "_GATHER_FROM", 2):  # these few arrays form runs
        _packer_matches_per_tensor_copies(specs)


def _packer_matches_per_tensor_copies(specs):
    flat = {}
    for i, (shape, dtype, transposed) in enumerate(specs):
        t = torch.randn(shape[::-1] if transposed else shape).to(dtype)
        flat[f"t{i}"] = t.T if transposed and t.dim() == 2 else t.reshape(shape)  # some non-contiguous
    manifest = make_manifest(flat)
    nbytes = slot_nbytes(manifest, "cpu")
    want = torch.full((nbytes,), 0xAB, dtype=torch.uint8)
    for v, t in zip(views(want, manifest), flat.values()):
        v.copy_(t)
    got = torch.full((nbytes,), 0xAB, dtype=torch.uint8)
    Packer(got, manifest).write(list(flat.values()))
    assert torch.equal(got, want)


def test_packer_gathers_only_long_runs_of_small_arrays():
    """LAYOUT-2: a gather pays off only for many small arrays (tests/gpu/gather_sizes.py on an H100: 512 arrays
    of 32 KiB 0.67x the per-array copies, 64 arrays 1.3x, 512 of 512 KiB 2.1x); a dense LLM's layer (a few
    arrays, some of MiBs) is left to copy_, the many experts of a mixture are gathered."""
    if not hasattr(torch, "_chunk_cat"):
        pytest.skip("this torch has no _chunk_cat; every array is copied on its own")
    layer = {"norm": torch.zeros(256), "q": torch.zeros(256, 256), "k": torch.zeros(64, 256), "v": torch.zeros(64, 256),
             "o": torch.zeros(256, 256), "up": torch.zeros(768, 256), "down": torch.zeros(256, 768)}
    experts = {f"e{i}": torch.zeros(32, 64) for i in range(layout._GATHER_FROM)}  # 8 KiB each
    big = {f"b{i}": torch.zeros(128, 256) for i in range(layout._GATHER_FROM)}  # 128 KiB each
    for flat, gathered in ((layer, False), (dict(list(experts.items())[:-1]), False), (experts, True), (big, False)):
        manifest = make_manifest(flat)
        packer = Packer(torch.zeros(slot_nbytes(manifest, "cpu"), dtype=torch.uint8), manifest)
        assert bool(packer.runs) == gathered, (len(flat), packer.runs)


def test_packer_gathers_back_to_back_arrays_in_one_run():
    """LAYOUT-2: 500 arrays of 64-byte multiples cost one gather, not 500 copies."""
    flat = {f"w{i}": torch.full((16,), float(i)) for i in range(500)}
    flat["odd"] = torch.ones(3)
    flat["half"] = torch.ones(16, dtype=torch.float16)
    manifest = make_manifest(flat)
    packer = Packer(torch.zeros(slot_nbytes(manifest, "cpu"), dtype=torch.uint8), manifest)
    if not hasattr(torch, "_chunk_cat"):
        pytest.skip("this torch has no _chunk_cat; every array is copied on its own")
    assert [(a, b) for a, b, _ in packer.runs] == [(0, 501)]
    packer.write(list(flat.values()))
    assert [float(v[0]) for v in packer.views[:500]] == [float(i) for i in range(500)]
    assert torch.equal(packer.views[-1], flat["half"])


@settings(max_examples=300, deadline=None)
@given(name=st.text(alphabet=st.characters(blacklist_categories=()), max_size=40)
       | st.text(alphabet=st.characters(blacklist_categories=()), min_size=1020, max_size=1100))
def test_any_str_name_round_trips_on_the_wire_or_is_refused_at_once(name):
    """SEC-7: a name is either refused by make_manifest with ValueError, or comes back from the wire the same."""
    from weightsync import wire
    from weightsync.messages import Init

    try:
        manifest = make_manifest({name: torch.zeros(2)})
    except ValueError as e:
        assert "SEC-7" in str(e)
        return
    init = Init("1.1", 0, manifest, (), 0, 0)
    assert wire.decode(wire.payload(init), wire.FROM_SENDER).manifest[0].name == name


@pytest.mark.parametrize("dtype", [d for d in ("float8_e4m3fn", "float8_e5m2", "complex32", "qint8", "bits8")
                                   if hasattr(torch, d)])
def test_dtypes_the_wire_does_not_define_are_refused_by_name(dtype):
    """SEC-7: only Table 12-2's dtypes are sent; a receiver reads no other name either."""
    with pytest.raises(WeightsMismatchError, match="unknown dtype"):
        dtype_of(dtype)


def test_a_target_on_the_meta_device_is_refused_though_its_device_index_is_a_cpu_tensors():
    """A copy into a meta tensor writes nothing and raises nothing: a target (INIT-3 at connect, ACK-7 at each
    apply) with a meta tensor where the manifest says cpu must be refused, on the checker's fast path too."""
    m = make_manifest({"a": torch.zeros(3), "b": torch.zeros(2, 2)})
    checker = Checker(m, target=True)
    ok = {"a": torch.zeros(3), "b": torch.zeros(2, 2)}
    assert checker.ordered(ok)[0] is ok["a"]
    with pytest.raises(WeightsMismatchError, match="'b' is float32\\[2, 2\\] on meta, expected float32\\[2, 2\\] on cpu"):
        checker.ordered({**ok, "b": torch.empty(2, 2, device="meta")})


def test_a_sparse_tensor_of_the_right_shape_is_refused_on_the_fast_path_too():
    """A sparse tensor answers stride() (with zeros) rather than raising: its shape and element count match, so
    only its layout tells it from a dense one (BAD-2, INIT-3: refused before any copy is tried)."""
    m = make_manifest({"a": torch.zeros(3), "b": torch.zeros(4, 3)})
    for target in (False, True):
        with pytest.raises(WeightsMismatchError, match="'b'"):
            Checker(m, target=target).ordered({"a": torch.zeros(3), "b": torch.zeros(4, 3).to_sparse()})


def test_a_cast_groups_init_is_checked_against_the_frame_bound_too(monkeypatch):
    """SEC-7: a bf16 group's Init names "bfloat16" where the weights say "float32", one byte more per entry; the
    Sender checks each group's own Init, so weights whose cast Init would not fit one frame are refused when the
    Sender is made, not at connect (where the receiver would see its channel end). The bound is lowered to the
    uncast Init's size, so the cast one is just over it (an outside colleague found it with 16,500 long names)."""
    from weightsync import Sender, wire
    from weightsync.layout import cast_manifest
    from weightsync.messages import PROTOCOL_VERSION, Init

    weights = {f"layer{i}.weight": torch.zeros(2) for i in range(50)}
    manifest = make_manifest(weights)
    size = lambda m: len(wire.payload(Init(PROTOCOL_VERSION, 0, tuple(m), (), 0, 0))) + 3 * wire.SLOTINFO_ROOM  # noqa: E731
    assert size(cast_manifest(manifest, torch.bfloat16)) > size(manifest)
    monkeypatch.setattr(wire, "MAX_TO_RECEIVER", size(manifest))
    Sender(weights, 1, max_slots=3).close()  # the uncast Init fits exactly
    with pytest.raises(ValueError, match="SEC-7"):
        Sender(weights, 1, max_slots=3, dtypes=torch.bfloat16)


@pytest.mark.parametrize("target", ["own", "packed"])
def test_a_copying_receiver_applies_slots_of_any_size_that_holds_every_array(target):
    """LAYOUT-1: a slot is at least the end of its last array and a receiver accepts any such size. The two
    strategies that copy a slot's bytes in one go (no target: a buffer of the receiver's own; a packed target) copy
    the arrays' bytes, not the slot whole, so a later slot smaller or larger than the Init's applies."""
    from weightsync import apply, messages, pack, slots

    w = {"a": torch.randn(3, 5), "n": torch.arange(7, dtype=torch.int32), "b": torch.randn(2)}
    packed = pack({k: v.clone() for k, v in w.items()})
    manifest = packed.manifest
    end = max(e.offset + e.nbytes for e in manifest)

    def slot(version: int, nbytes: int) -> slots.Mapped:
        buf = torch.zeros(nbytes, dtype=torch.uint8)
        for view, t in zip(layout.views(buf, manifest), w.values()):
            view.copy_(t + version)
        return slots.Mapped(buf)

    first = slot(0, layout.slot_nbytes(manifest, "cpu"))
    init = messages.Init("1.1", 0, manifest, (messages.SlotInfo(0, "cpu", first.tensor.numel()),), 0, 0)
    strategy = apply.make(0, init, packed if target == "packed" else None, False, {0: first})
    assert type(strategy).__name__ == {"own": "CopyToOwn", "packed": "CopyToPacked"}[target]
    for version, nbytes in ((1, end), (2, end + 4096)):
        later = slot(version, nbytes)
        strategy.apply(layout.views(later.tensor, manifest), later)
        for got, t in zip(strategy.current(), w.values()):
            assert torch.equal(got, t + version), f"version {version} from a slot of {nbytes} bytes"
