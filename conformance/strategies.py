"""Hypothesis strategies for the suite: names, dtypes, shapes, weights and bad inputs (ROLE-3, BAD-*).

Every strategy the tests use lives here, so that what the suite explores is
visible in one place.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

#: Dtypes every implementation must carry bit for bit (ROLE-3).
DTYPES = (
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int8,
    torch.uint8,
    torch.bool,
)

names = st.from_regex(r"[a-z][a-z0-9_]{0,5}(\.[a-z0-9_]{1,4})?", fullmatch=True)
dtypes = st.sampled_from(DTYPES)
#: 0-d, empty and small shapes (ROLE-3), and sizes that fill whole 64-byte lines (16 or 64
#: elements), so that arrays of one dtype can sit back to back in a slot (LAYOUT-1).
shapes = st.lists(st.integers(0, 5) | st.sampled_from([16, 64]), min_size=0, max_size=3).filter(
    lambda s: numel(s) <= 4096
).map(tuple)

Spec = list  # [(name, dtype, shape)]


@st.composite
def specs(draw, min_size: int = 1, max_size: int = 5) -> Spec:
    """A manifest as the suite sees it: distinct names, each with a dtype and a shape."""
    ns = draw(st.lists(names, min_size=min_size, max_size=max_size, unique=True))
    return [(n, draw(dtypes), draw(shapes)) for n in ns]


def numel(shape) -> int:
    out = 1
    for s in shape:
        out *= s
    return out


@st.composite
def tensors(draw, dtype: torch.dtype, shape) -> torch.Tensor:
    """Arbitrary bytes of the right size (NaN payloads included); bool holds only 0 and 1."""
    n = numel(shape)
    size = n * torch.empty((), dtype=dtype).element_size()
    if dtype is torch.bool:
        data = bytes(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    else:
        data = draw(st.binary(min_size=size, max_size=size))
    if n == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(shape).clone()


def weights_for(spec: Spec):
    """Weights that match `spec` (name -> tensor), in spec order."""
    return st.fixed_dictionaries({n: tensors(d, s) for n, d, s in spec})


def distinct_weights(spec: Spec, seed: int) -> dict:
    """Deterministic weights for `spec` whose bytes depend on `seed` (examples and loads)."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for n, d, s in spec:
        raw = torch.randint(0, 256, (numel(s) * torch.empty((), dtype=d).element_size(),), generator=g, dtype=torch.uint8)
        if d is torch.bool:
            raw = raw % 2
        out[n] = raw.view(d).reshape(s).clone() if numel(s) else torch.empty(s, dtype=d)
    return out


#: A small fixed spec for the focused example tests: a float, a bf16 0-d, an int64, a bool, an empty.
BASIC_SPEC: Spec = [
    ("w", torch.float32, (4, 3)),
    ("b", torch.bfloat16, ()),
    ("steps", torch.int64, (2,)),
    ("mask", torch.bool, (5,)),
    ("none", torch.float16, (0, 3)),
]


def basic_mismatching_target() -> dict:
    """A mapping target of BASIC_SPEC with one shape changed ("w" of 7): a receiver given it refuses the Init (INIT-3)."""
    return {n: torch.zeros(7 if n == "w" else s, dtype=d) for n, d, s in BASIC_SPEC}

#: A dtype of the same element size, for each of DTYPES.
SAME_SIZE = {
    torch.float32: torch.int32, torch.int32: torch.float32,
    torch.float64: torch.int64, torch.int64: torch.float64,
    torch.float16: torch.bfloat16, torch.bfloat16: torch.float16,
    torch.int8: torch.uint8, torch.uint8: torch.int8, torch.bool: torch.uint8,
}

BAD_KINDS = ("missing", "unknown", "dtype", "cast", "shape", "broadcast", "requires_grad", "not_a_tensor")
#: Which requirement each bad kind violates (BAD-1 names, BAD-2 entries, BAD-3 grad).
BAD_IDS = {
    "missing": "BAD-1",
    "unknown": "BAD-1",
    "dtype": "BAD-2",
    "cast": "BAD-2",
    "shape": "BAD-2",
    "broadcast": "BAD-2",
    "requires_grad": "BAD-3",
    "not_a_tensor": "BAD-2",
}


def make_bad(spec: Spec, good: dict, kind: str, which: int = 0) -> dict:
    """`good` changed in one way that the sender must reject (BAD-1..BAD-3)."""
    bad = dict(good)
    name, dtype, shape = spec[which % len(spec)]
    if kind == "missing":
        del bad[name]
    elif kind == "unknown":
        bad[name + "_extra_"] = torch.zeros(1)
    elif kind == "dtype":
        other = torch.float64 if dtype is not torch.float64 else torch.float32
        bad[name] = good[name].to(other)
    elif kind == "cast":  # same element size: a byte copy would "work", a copy_ would cast silently
        bad[name] = good[name].view(SAME_SIZE[dtype])
    elif kind == "shape":
        bad[name] = torch.zeros((*shape, 2), dtype=dtype)
    elif kind == "broadcast":  # a shape that copy_ would broadcast silently
        if not shape:
            return make_bad(spec, good, "shape", which)
        big = [i for i, n in enumerate(shape) if n > 1]
        narrow = (*shape[: big[0]], 1, *shape[big[0] + 1 :]) if big else shape[1:]
        bad[name] = torch.zeros(narrow, dtype=dtype)
    elif kind == "requires_grad":
        bad[name] = torch.zeros(shape, dtype=torch.float32 if not dtype.is_floating_point else dtype).requires_grad_(True)
        if not dtype.is_floating_point:
            # requires_grad needs a float; keep the dtype right by picking a float entry if any.
            floats = [(n, d, s) for n, d, s in spec if d.is_floating_point]
            if not floats:
                return make_bad(spec, good, "missing", which)
            n, d, s = floats[which % len(floats)]
            bad = dict(good)
            bad[n] = good[n].clone().requires_grad_(True)
        else:
            bad[name] = good[name].clone().requires_grad_(True)
    elif kind == "not_a_tensor":
        bad[name] = [0.0]
    else:
        raise ValueError(kind)
    return bad


bad_kinds = st.sampled_from(BAD_KINDS)


def colliding_tensordict(spec: Spec, good: dict):
    """`good` as a nested TensorDict, plus a top-level key spelled like one of its nested names, so that
    two entries flatten to one name (BAD-1). None when no name of `spec` is nested."""
    from tensordict import TensorDict

    dotted = next((n for n, _, _ in spec if "." in n), None)
    if dotted is None:
        return None
    td = TensorDict({}, batch_size=[])
    for name, t in good.items():
        td[tuple(name.split("."))] = t
    td[dotted] = good[dotted].clone()  # a plain string key is not split: "a.b" beside ("a", "b")
    return td


#: One array of every dtype of Table 12-2 that torch has, 0-d and empty arrays among them (WIRE-8).
ALL_DTYPES_SPEC = [
    ("b", torch.bool, (3, 5)),
    ("i8", torch.int8, (7,)),
    ("i16", torch.int16, (2, 3)),
    ("i32", torch.int32, ()),
    ("i64", torch.int64, (4, 1)),
    ("u8", torch.uint8, (0, 3)),
    ("f16", torch.float16, (3, 3)),
    ("bf16", torch.bfloat16, (5,)),
    ("f32", torch.float32, (2, 2, 2)),
    ("f64", torch.float64, (3,)),
    ("c64", torch.complex64, (2,)),
    ("c128", torch.complex128, (1, 2)),
]


def raw_bytes(t: torch.Tensor) -> bytes:
    """The array's elements in C order, as this host stores them: what a slot holds for it (WIRE-8)."""
    return t.contiguous().view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
