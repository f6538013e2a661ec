"""Mutant: the sender announces in Init's `data_plane` a buffer smaller than the one it transfers (the
size of the slot's arrays without the layout's padding, say), so each transfer carries more bytes
than the receiver posted for. Violates NET-2 ("the sender sends one transfer of `nbytes` bytes").
A gloo rank that receives more than it posted aborts its process: the suite's side of a scripted
receiver must take that in a process of its own and name the requirement, not die.

Seam: netplane.Store.data_plane, which writes the announced `nbytes`.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, netplane  # noqa: F401

VIOLATES = "NET-2"
KILLED_BY = ("conformance/test_network.py::test_each_transfer_is_the_version_laid_out_as_a_slot_in_nbytes",)

_data_plane = netplane.Store.data_plane


def _short(self, advertised_host, nbytes):
    return _data_plane(self, advertised_host, nbytes - 64)  # BUG: less than each transfer carries


netplane.Store.data_plane = _short
