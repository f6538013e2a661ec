"""Mutant: on bad input the entries that do match are written into the latest slot first. Violates BAD-4."""

import torch

from weightsync import *  # noqa: F401,F403
from weightsync import CAPABILITIES, WeightsMismatchError, __all__  # noqa: F401
from weightsync import Sender as _Sender
from weightsync import layout

VIOLATES = "BAD-4"


class Sender(_Sender):
    def _publish(self, weights, workers, deadline):
        flat = layout.flatten(self._source if weights is None else weights)
        try:
            self._checker.ordered(flat)
        except WeightsMismatchError:
            with torch.no_grad():
                for group in self._groups.values():
                    for entry, view in zip(group.manifest, group.latest.views):
                        t = flat.get(entry.name)
                        if isinstance(t, torch.Tensor) and t.shape == view.shape and t.dtype == view.dtype:
                            view.copy_(t.detach())
            raise
        return super()._publish(weights, workers, deadline)
