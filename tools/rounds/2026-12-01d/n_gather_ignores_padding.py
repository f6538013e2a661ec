"""Bug: the sender's packer gathers a run of many small arrays of one dtype (the experts of a mixture,
hundreds of biases) into the slot with one `torch._chunk_cat`, and forms a run from consecutive
manifest entries of one dtype and device, taking them to sit back to back in the slot: the run's
bytes start at the first entry's offset and are as long as the run's arrays together. The
implementer reasoned from the weight matrices they had measured, whose sizes are multiples of 64
bytes, and forgot that LAYOUT-1 pads every array to a 64-byte offset: in a run where an array's size
is not a multiple of 64 (a bias of 10 floats, 40 bytes), every later array of the run is written at
the wrong place, over the padding and the neighbours' bytes. Models of a few tensors, or of large
ones, are copied array by array and arrive intact; a model of 256 or more small, odd-sized arrays
arrives garbled at every receiver, which acks it.

Breaks LAYOUT-1 ("All arrays of one device sit in one buffer per slot, in manifest order, each at an
offset that is a multiple of 64 bytes"), WIRE-8 ("A slot's buffer holds each array of the manifest at
its Entry's offset") and ACK-3 (the receiver's acked weights are not the bytes published).
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout  # noqa: F401

VIOLATES = ("LAYOUT-1", "WIRE-8", "ACK-3")


def _adjacent(a, b):
    # BUG: consecutive entries of one dtype are taken to be back to back; the 64-byte padding is forgotten
    return (a.dtype == b.dtype and a.device == b.device and a.nbytes > 0 and b.nbytes > 0
            and len(a.shape) > 0 and len(b.shape) > 0)


def __init__(self, buffer, manifest, source=None, cast=False):
    import torch
    self.views = layout.views(buffer, manifest)
    self.runs = []
    rest = []
    gather = layout._CHUNK_CAT is not None and not cast and layout.gathers(buffer.device, torch.device(source or buffer.device))
    i = 0
    while i < len(manifest):
        j = i + 1
        while gather and j < len(manifest) and _adjacent(manifest[j - 1], manifest[j]):
            j += 1
        total = sum(e.nbytes for e in manifest[i:j])  # BUG: the run's bytes, as if no padding lay between them
        if j - i >= layout._GATHER_FROM and total < layout._GATHER_BELOW * (j - i):
            first = manifest[i]
            raw = buffer[first.offset : first.offset + total]
            self.runs.append((i, j, raw.view(layout.dtype_of(first.dtype)).view(1, -1)))
        else:
            rest.extend(range(i, j))
        i = j
    self._rest = rest
    self._rest_views = [self.views[k] for k in rest]


layout.Packer.__init__ = __init__
