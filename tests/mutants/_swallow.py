"""Shared by the mutants that report a failed send as a success."""

from weightsync import Sender


def swallowing(error: type) -> type:
    """A Sender whose send() and futures return the version where they would raise `error`."""

    class _Future:
        def __init__(self, future):
            self._future = future
            self.version, self.workers = future.version, future.workers

        def done(self):
            return self._future.done()

        def wait(self, timeout=None):
            try:
                return self._future.wait(timeout)
            except error:
                return self.version

    class SwallowingSender(Sender):
        def send(self, weights=None, *, workers=None, timeout=None):
            try:
                return super().send(weights, workers=workers, timeout=timeout)
            except error as e:
                if e.version is not None and e.version == self.version:
                    return e.version  # published, then failed: reported as success
                raise

        def send_async(self, weights=None, *, workers=None, timeout=None):
            return _Future(super().send_async(weights, workers=workers, timeout=timeout))

    return SwallowingSender
