"""Bug: `await future` runs `future.wait()` (no timeout: the bound is the caller's) in the event loop's default
executor, the textbook way to await a blocking call. When the caller bounds it with `asyncio.wait_for(future, t)`
and t passes, asyncio cancels only the awaiting wrapper: the executor thread goes on waiting for the receivers
without bound. The loop cannot then be shut down: `asyncio.run()` of a coroutine that gave up on a silent worker
never returns (it joins its default executor, whose thread waits for an ack that does not come), and each
timed-out await keeps one of the executor's few threads, so after a handful of them other awaits and
`run_in_executor` calls of the application queue behind them. The implementer read "without blocking the event
loop" and "a bound is the caller's (asyncio.wait_for)" and took a cancelled wait_for for the end of the wait.
Breaks API-11 ("`await future` ... without blocking the event loop ...; a bound is the caller's
(`asyncio.wait_for`)") and API-7 ("every wait it makes ... is bounded by its timeout").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync.future import SendFuture

VIOLATES = ("API-11", "API-7")


def __await__(self):
    import asyncio

    loop = asyncio.get_running_loop()
    # BUG: wait() in the default executor; a cancelled await leaves that thread waiting without bound
    return loop.run_in_executor(None, self.wait, None).__await__()


SendFuture.__await__ = __await__
