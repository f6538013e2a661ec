"""Mutant: on bad input, the entries that do match are written into the latest slot before the mismatch is
raised ("copy what we can"), so a joiner reads bytes that were never published. Violates BAD-4.

Seam: Publisher.publish, wrapped: on WeightsMismatchError the matching entries go into the latest slot first.
"""

import torch

from weightsync import *
from weightsync import CAPABILITIES, WeightsMismatchError, __all__, layout  # noqa: F401
from weightsync.publishing import Publisher

VIOLATES = "BAD-4"
KILLED_BY = ("conformance/test_failures.py::test_bad_input_is_rejected_before_any_byte_changes",)


_publish = Publisher.publish


def _publish_partly(self, weights, workers, deadline):
    try:
        return _publish(self, weights, workers, deadline)
    except WeightsMismatchError as e:
        try:
            flat = layout.flatten(self.source if weights is None else weights)
        except Exception:  # noqa: BLE001 - nothing to copy
            raise e from None
        with torch.no_grad():
            for group in self.hub.pool.groups.values():
                for entry, view in zip(group.manifest, group.latest.views):
                    t = flat.get(entry.name)
                    if isinstance(t, torch.Tensor) and t.shape == view.shape and t.dtype == view.dtype:
                        view.copy_(t.detach())  # BUG: a shared byte changes before the rejection
        raise


Publisher.publish = _publish_partly
