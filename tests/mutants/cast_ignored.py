"""Mutant: the sender takes `dtypes=` and ignores it, so every receiver gets slots of the weights' own dtypes
and a bf16 worker behind an fp32 trainer is refused at connect() as if nobody had asked for the cast.
Violates LAYOUT-3 ("That receiver's Init then names the chosen dtype for every floating-point entry").

Seam: options.slot_dtypes (each receiver's slot dtype), which answers None for all.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__, options  # noqa: F401

VIOLATES = "LAYOUT-3"
KILLED_BY = ("conformance/test_consistency.py::test_cast_slots_give_each_receiver_the_rounded_weights_it_asked_for",)

options.slot_dtypes = lambda dtypes, n, manifest: [None] * n  # BUG
