"""Sender-program mutant over the torch-free NumPy sender: no SEND-7 collection window, so a send raises at the
first failure and a receiver failing 0.2 s later goes unnamed. Violates SEND-7.

Found by an outside round of plausible sender bugs, where it survived the suite; seam: numpy_sender.WINDOW.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "interop" / "numpy"))

import numpy_sender  # noqa: E402

VIOLATES = ("SEND-7",)
KILLED_BY = ("conformance/test_sender_wire.py::test_receivers_that_fail_together_are_named_together",)

numpy_sender.WINDOW = 0.0  # BUG: SEND-7's 1 s window

if __name__ == "__main__":
    sys.exit(numpy_sender.main(sys.argv))
