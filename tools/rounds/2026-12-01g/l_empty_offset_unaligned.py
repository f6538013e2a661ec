"""Bug: an array with zero elements is placed at the unaligned end of the array before it instead of at the next
multiple of 64: for weights `w: float32[3]`, `e: float32[0]`, `b: float32[4]` the Init's manifest puts `e` at
offset 12. Receivers of this implementation compute their views from the manifest and see nothing wrong, but a
peer written against the wire profile that checks (or relies on) 64-byte offsets refuses or mis-reads the Init.
A careful implementer could have written it from LAYOUT-1's "An array with zero elements has nbytes 0 and takes
no space", read as "needs no place either": alignment exists to give typed views of bytes, and an empty array has
no bytes to view, so the padding is added only in front of arrays that hold some. Breaks LAYOUT-1 ("each at an
offset that is a multiple of 64 bytes") and WIRE-8 ("Offsets are multiples of 64 (LAYOUT-1), an empty array's
included").
"""
import weightsync  # noqa: F401
import weightsync.layout as _layout
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.messages import Entry

VIOLATES = ("LAYOUT-1", "WIRE-8")


def make_manifest(flat):
    entries = []
    ends = {}
    for name, t in flat.items():
        _layout.check_carriable(name, t)
        _layout._check_tensor(name, t)
        device = str(t.device)
        nbytes = t.numel() * t.element_size()
        end = ends.get(device, 0)
        # BUG: an empty array takes no space, so it is given no padding either: it sits where the last one ended
        offset = -(-end // _layout.ALIGN) * _layout.ALIGN if nbytes else end
        entries.append(Entry(name, _layout.dtype_name(t.dtype), tuple(t.shape), device, offset, nbytes))
        ends[device] = offset + nbytes if nbytes else end
    return tuple(entries)


_layout.make_manifest = make_manifest
