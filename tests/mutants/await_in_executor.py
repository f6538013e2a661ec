"""Mutant: `await future` runs `future.wait()` without a timeout in the event loop's default executor, the textbook
way to await a blocking call. When `asyncio.wait_for` gives up, only the awaiting wrapper is cancelled: the executor's
thread goes on waiting for the targets, and `asyncio.run()`, which joins that executor before it returns, never
returns while they stay silent. Violates API-11 (and API-7: that wait has no bound). From an eleventh outside round.

Seam: SendFuture.__await__.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.future import SendFuture

VIOLATES = ("API-11", "API-7")
KILLED_BY = ("conformance/test_binding.py::test_a_cancelled_await_leaves_nothing_waiting_and_the_loop_closes",)


def __await__(self):
    import asyncio

    loop = asyncio.get_running_loop()
    return loop.run_in_executor(None, self.wait, None).__await__()  # BUG: a cancelled await leaves this thread waiting


SendFuture.__await__ = __await__
