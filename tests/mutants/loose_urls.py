"""Mutant: a receiver id is read with any ASCII digits, leading zeros included, so `receiver=007` names
receiver 7 instead of being refused. Violates RDV-1 (the id is "0 or a decimal integer without leading
zeros", and "a receiver MUST refuse anything outside it with ValueError").

Seam: rendezvous._DECIMAL (the pattern of ids and ports), which admits leading zeros.
"""

import re

from weightsync import *
from weightsync import CAPABILITIES, __all__, rendezvous  # noqa: F401

VIOLATES = "RDV-1"
KILLED_BY = ("conformance/test_rendezvous.py::test_a_malformed_url_is_refused_at_once",)

rendezvous._DECIMAL = re.compile(r"[0-9]+")  # BUG
