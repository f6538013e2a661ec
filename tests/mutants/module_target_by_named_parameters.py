"""Mutant (from the outside round of 2026-12-01c, where it survived): A receiver reads a module target's tensors from
`named_parameters()` and `named_buffers()` instead of its `state_dict()`. The implementer needed the Parameter
objects themselves (to write them in place and, zero-copy, to rebind their `.data`) and knew that `state_dict()`
hands out detached tensors, not knowing `keep_vars=True`; parameters plus buffers looked like the same set of names.
They are not: `named_buffers()` also yields non-persistent buffers (`register_buffer(..., persistent=False)`: a
rotary or attention-mask cache, a running statistic kept out of checkpoints), which the sender's manifest, made from
`state_dict()`, does not have, and it drops the second name of a tied parameter, which the manifest has. A worker
whose policy has such a buffer is refused at connect with WeightsMismatchError ("unknown names"), though it is built
exactly like the trainer's. Breaks INIT-3 (the target is checked against the manifest: for a module, the names of
its state_dict, API-1/API-3: "an nn.Module (its state_dict tensors are written in place ...)"): a matching target
refused.
"""

from torch import nn

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import apply as _apply
from weightsync import layout as _layout
from weightsync.errors import WeightsMismatchError

VIOLATES = ("INIT-3", "API-3")
KILLED_BY = ("conformance/test_handshake.py::test_a_module_target_is_its_state_dict_tied_and_unsaved_tensors_included",)


def _target_tensors(target):
    if isinstance(target, nn.Module):
        # BUG: the module's parameters and buffers, not its state_dict's names
        flat = dict(target.named_parameters())
        flat.update(target.named_buffers())
        return flat
    return _layout.flatten(target, detach=False)


def targets(self, rule="ACK-7"):
    try:
        return self.checker.ordered(_target_tensors(self.target), allow_grad=True)
    except WeightsMismatchError as e:
        raise WeightsMismatchError(f"the target of receiver {self.rid} ({rule}): {e}") from None


_apply.Strategy.targets = targets
