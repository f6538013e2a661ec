"""Bug: a receiver's target check (INIT-3 at connect, ACK-7 before each apply) reads each target
tensor's device as `get_device()`, the cheap index torch returns (-1 for the CPU), exactly as the
sender checks its weights, and so takes a tensor on the `meta` device, whose index is -1 too, for a
CPU tensor. The implementer shared one fast check between the sender's weights and the receivers'
targets, reasoning that a device mismatch cannot go unnoticed anyway because the copy would fail
(it does for the sender, which reads from the tensor); but a copy *into* a meta tensor writes
nothing and raises nothing. A worker that built its model under `torch.device("meta")` (the usual
fast initialisation of a large model) and forgot `to_empty()` connects, answers Ready(ok) and acks
every version while its weights hold no bytes at all.

Breaks INIT-3 ("A receiver MUST check its target against the manifest (names exactly, dtype, shape,
device, dense layout) ... At connect, a mismatch answers Ready(error, detail)"), ACK-7 (the same check
before each apply, Ack(error) on a mismatch) and ACK-3 ("Ack(r, v, ok) promises that r's weights equal,
bit for bit, the bytes the sender published as version v").
"""
import torch

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, layout  # noqa: F401

VIOLATES = ("INIT-3", "ACK-7", "ACK-3")

_DTYPE, _REQUIRES_GRAD = layout._DTYPE, layout._REQUIRES_GRAD


def _bulk(self, flat, allow_grad):
    out = list(map(flat.__getitem__, self.names))
    if not (len(flat) == len(out)
            and list(map(_DTYPE, out)) == self._dtypes
            # BUG: the device index alone: a meta tensor's is a CPU tensor's (-1), and nothing else looks
            and list(map(torch.Tensor.get_device, out)) == self._device_ids
            and list(map(torch.Tensor.numel, out)) == self._numels
            and (allow_grad or not any(map(_REQUIRES_GRAD, out)))):
        return None
    expect = self._expect
    strides = list(map(torch.Tensor.stride, out))
    if strides != self._strides:
        odd = [i for i, (got, want) in enumerate(zip(strides, self._strides)) if got != want]
        if not all(out[i].shape == expect[i][1] and out[i].layout == torch.strided for i in odd):
            return None
    return out if all(out[i].shape == expect[i][1] for i in self._loose) else None


layout.Checker._bulk = _bulk
