"""Mutant (from the outside round of 2026-12-01b, where it survived): `await future` hands the outcome to the event
loop with `loop.call_soon` instead of `loop.call_soon_threadsafe`. The implementer saw that the done callbacks run
"from a thread of the binding" only for a future still pending, and wrote the common case of asyncio code, where
callbacks run on the loop's own thread (a future already decided runs `fn` at once, in the calling thread: that path
works). For a send still waiting for its acks, the binding's watcher thread settles the asyncio future through
`call_soon`, which queues the callback without waking the loop: an event loop that has nothing else to do sleeps on
in its selector, and `await future` gives its outcome only when some other event wakes the loop, or never. A `await
asyncio.wait_for(future, 10)` whose receivers acked in a moment raises TimeoutError after 10 s. API-11: `await
future` gives the outcome of `wait()` without blocking the event loop.

Seam: SendFuture.__await__, whose callback hands the outcome over with call_soon.
"""

from weightsync import *
from weightsync import CAPABILITIES, __all__  # noqa: F401
from weightsync import future as _future

VIOLATES = ("API-11",)
KILLED_BY = ("conformance/test_binding.py::test_await_gives_the_version_or_the_error_without_blocking_the_loop",)


def __await__(self):
    """`await future` in asyncio: wait()'s version or error, without blocking the event loop (API-11)."""
    import asyncio

    loop = asyncio.get_running_loop()
    result = loop.create_future()

    def settle() -> None:
        if result.cancelled():
            return
        version, error = self._seen  # what the watcher's wait() decided, before the callbacks ran
        if error is not None or version is None:
            result.set_exception(error or RuntimeError("the watcher decided nothing"))
        else:
            result.set_result(version)

    self.add_done_callback(lambda _: loop.call_soon(settle))  # BUG: not call_soon_threadsafe
    return result.__await__()


_future.SendFuture.__await__ = __await__
