"""Bug: `Packed.check()` compares the number of references to the packed buffer's storage with the number it had
*at packing*, and takes any number not below it as "nothing left the buffer"; it never moves that mark. A trainer
that keeps views of its packed weights (the classic `best = model.state_dict()`, which holds views and not copies,
an EMA or logging helper that keeps `p.detach()`) raises the count for good, and from then on a tensor whose `.data`
is replaced (`p.data = new`, a swap-in of other weights) is not noticed: the send goes through, acks ok, and the
workers get the stale bytes left in the buffer at that tensor's place instead of a WeightsMismatchError. A careful
implementer could have written it from the reference's own reasoning in spec 10.6, "replacing `.data` drops a
reference to the buffer's storage": a drop below the count at packing is what a re-homed tensor looks like, and more
references than at packing only means "more views, none lost". But the views kept count from the send on which they
were first seen; spec 10.6 lets go unnoticed only a re-homing in the *same interval* in which a lasting view was made.
Breaks API-8 ("A tensor that no longer views the buffer where the manifest puts it (its .data replaced, resized) makes
the next send that uses the Packed raise WeightsMismatchError naming it"; "A send MUST deliver exactly what it would
deliver for the unpacked weights") and BAD-2 (weights whose layout differs "MUST be rejected with
WeightsMismatchError").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout, packing  # noqa: F401
from weightsync.errors import WeightsMismatchError

VIOLATES = ("API-8", "BAD-2")


def check(self) -> None:
    count = self._use_count()
    floor = self.__dict__.setdefault("_at_packing", self._count)  # BUG: the count at packing is the mark, for good
    if (count is not None and count >= floor and self.buffer.data_ptr() == self._ptr
            and sum(map(torch_numel, self._loose[0])) == self._loose[1]):
        return  # no reference lost since packing: nothing left the buffer
    for name, t, e, ptr in zip(self.names, self.tensors, self.manifest, self._expected):
        if (t.data_ptr() != ptr or t.dtype != layout.dtype_of(e.dtype) or tuple(t.shape) != e.shape
                or (t.numel() > 1 and not t.is_contiguous())):
            raise WeightsMismatchError(
                f"{name!r} no longer views the packed buffer (its .data was replaced or it was resized); "
                "pack the weights again (API-8, BAD-2)"
            )
    self._loose = self._resizable()


def torch_numel(t):
    return t.numel()


packing.Packed.check = check
