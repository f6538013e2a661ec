"""How much Python a send runs: counted, not timed (issue 44, part 4).

A small policy's send costs what the Python on both sides costs, call by call: each call
of a Python function (a property, a comprehension, a context manager's enter) is a frame,
and on this machine a frame costs about twice as much inside a send as in a loop that does
nothing else. The benchmark measures the time; this test keeps the count of the sending
thread's calls from creeping back, deterministically (no clock, no process). The budget
has some room: a change that needs more calls raises it here, on purpose, with its reason.
"""

from __future__ import annotations

import sys
import threading

import pytest
import torch

from weightsync import Receiver, Sender

#: Python calls in the sending thread for one send to one copying receiver, 1e3 params in 6 tensors: 99 when this
#: test was written (127 before the send path lost most of its comprehensions and properties, stop 67).
SEND_CALLS = 105


def _calls(fn) -> int:
    n = 0

    def count(frame, event, arg):
        nonlocal n
        n += event == "call"  # Python functions only: C functions report "c_call"

    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return n


@pytest.mark.timeout(60)
def test_a_small_send_runs_few_python_calls():
    weights = {f"t{i}": torch.randn(167) for i in range(6)}
    with Sender(weights, 1) as sender:
        receiver = Receiver(sender.handle(0))
        try:
            joining = threading.Thread(target=receiver.connect, args=(30,))
            joining.start()
            sender.connect(30)
            joining.join(30)
            for _ in range(5):
                sender.send(timeout=10)
            # the fewest over a few sends: a send whose wait was woken early polls once more
            calls = min(_calls(lambda: sender.send(timeout=10)) for _ in range(10))
        finally:
            receiver.close()
    assert calls <= SEND_CALLS, f"a send ran {calls} Python calls in the sending thread, the budget is {SEND_CALLS}"
