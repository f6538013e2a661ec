"""The exceptions of the binding (API-4).

Errors about receivers carry the receiver ids (`workers`) and the version they
concern, so a caller can restart exactly the receivers that failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class WeightSyncError(Exception):
    """Base of every error this package raises on purpose."""


class ProtocolError(WeightSyncError):
    """A message or call that is illegal in the current state (spec: SM-*)."""


class ClosedError(WeightSyncError):
    """A call on a Sender or Receiver that was closed (LIFE-6)."""


class WeightsMismatchError(WeightSyncError, ValueError):
    """Weights that do not match the manifest; nothing was written (BAD-*)."""


class _ReceiversError(WeightSyncError):
    """An error about some receivers and one version."""

    reason = "failed"

    def __init__(
        self,
        workers: Iterable[int],
        version: int | None,
        details: Mapping[int, str] | None = None,
        hint: str = "",
    ):
        self.workers = sorted(workers)
        self.version = version
        self.details = dict(details or {})
        what = f"version {version}" if version is not None else "no version published"
        msg = f"receiver(s) {self.workers} {self.reason} ({what})"
        if self.details:
            msg += ": " + "; ".join(f"{w}: {d}" for w, d in sorted(self.details.items()))
        if hint:
            msg += f". {hint}"
        super().__init__(msg)


class SyncTimeoutError(_ReceiversError, TimeoutError):
    """Receivers did not answer within the timeout (SEND-2)."""

    reason = "did not answer in time"


class ReceiverError(_ReceiversError):
    """Receivers reported that they could not apply a version (ACK-6, INIT-3)."""

    reason = "reported an error"


class ReceiverDiedError(_ReceiversError):
    """Receivers whose channel ended: the process exited or closed (SEND-3)."""

    reason = "are gone"
