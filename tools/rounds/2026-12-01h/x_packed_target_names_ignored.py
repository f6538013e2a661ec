"""Bug: a copying receiver whose target is packed (`Receiver(handle, weightsync.pack(model_or_mapping))`) takes the
one-copy apply (the slot's bytes copied whole into the packed buffer) whenever the packed buffer is laid out like the
slot, entry by entry (dtype, shape, offset, nbytes), without comparing the entries' names. A worker that packs a
mapping (or TensorDict) whose keys come in another order than the trainer's, e.g. {"b": ..., "a": ...} against the
trainer's {"a": ..., "b": ...} with both tensors of one shape (two biases, two experts), passes the target check
(names match as a set) and then gets each array's bytes in the other's place: connect() and every apply ack ok with
the values swapped. A careful implementer could have written it from API-8's "one buffer with the slot layout of their
manifest" and LAYOUT-1's "offsets and sizes are in the manifest ... both sides compute the same views from them": for a
byte copy only the layout matters, so the names looked like labels. But the order of the manifest is the sender's
("weights fixes the manifest, in its own order"), and a packed target keeps its own. Breaks INIT-4 ("A receiver
applies the Init's version before it answers Ready(ok, version)") and ACK-3 ("Ack(r, v, ok) promises that r's weights
equal, bit for bit, the bytes the sender published as version v").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, apply  # noqa: F401
from weightsync.packing import Packed

VIOLATES = ("INIT-4", "ACK-3")


def _laid_out(manifest):
    return [(e.dtype, tuple(e.shape), e.offset, e.nbytes) for e in manifest]


def _make(rid, init, target, zero_copy, mapped, checker, stream):
    if zero_copy:
        return apply.ZeroCopy(rid, checker, target)
    slot = mapped[init.slot].tensor
    assert slot is not None, "the Init's slot was mapped just now"
    # BUG: the layout decides the one-copy path; the names (and so the order) are not compared
    if (isinstance(target, Packed) and _laid_out(target.manifest) == _laid_out(init.manifest)
            and target.buffer.device.type == "cpu" and target.buffer.numel() == slot.numel()):
        return apply.CopyToPacked(rid, checker, target)
    if target is None:
        return apply.CopyToOwn(rid, checker, init, slot, stream)
    return apply.CopyToTarget(rid, checker, target, stream)


apply._make = _make
