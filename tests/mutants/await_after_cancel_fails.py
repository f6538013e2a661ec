"""Mutant (from the outside round of 2026-12-01c, where it survived): `await future` shares one asyncio future per
SendFuture (made at the first await, on that event loop), so that many coroutines awaiting one send add one done
callback, not one each. But `asyncio.wait_for(future, t)` cancels what it awaits when `t` passes: the shared asyncio
future is then cancelled for good, and every later `await future` on that loop raises CancelledError at once, even
once every target acked (the settle callback sees a cancelled future and gives up). The common pattern `try: await
asyncio.wait_for(fut, 5) except TimeoutError: log; then await again` turns a slow receiver into a cancelled
coroutine, which asyncio code takes for a shutdown. Breaks API-11: "`await future`, in asyncio, gives that same
outcome (the version, or the error `wait()` raises) without blocking the event loop; a bound is the caller's
(`asyncio.wait_for`)": the caller's bound ran out once, and took the outcome with it.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import future as _future

VIOLATES = ("API-11",)
KILLED_BY = ("conformance/test_binding.py::test_an_await_cancelled_by_its_timeout_leaves_the_future_to_await_again",)


def __await__(self):
    import asyncio

    loop = asyncio.get_running_loop()
    result = self.__dict__.get("_aio")
    if result is None or result.get_loop() is not loop:  # BUG: one asyncio future per SendFuture and loop, reused
        result = self._aio = loop.create_future()

        def settle() -> None:
            if result.cancelled():
                return
            version, error = self._seen  # what the watcher's wait() decided, before the callbacks ran
            if error is not None or version is None:
                result.set_exception(error or RuntimeError("the watcher decided nothing"))
            else:
                result.set_result(version)

        self.add_done_callback(lambda _: loop.call_soon_threadsafe(settle))
    return result.__await__()


_future.SendFuture.__await__ = __await__
