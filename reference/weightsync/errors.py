"""The exceptions of the binding (API-4, spec 8.3).

Errors about receivers carry every receiver at fault (`workers`), the version
they concern, and per receiver both the reason (`details`) and its kind
(`causes`), so that one failed send loses nothing: a caller can restart the
receivers that died and repair the ones that reported an error (SEND-7).

A call the caller may not make now is a LocalProtocolError; a message a peer
may not send is a RemoteProtocolError naming the state, the event and the
requirement it broke. Both are ProtocolErrors, as in protocol 1.0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

#: The kinds of failure a receiver error records per receiver (`causes`, SEND-7).
ANSWERED_ERROR = "error"  # the cause: the receiver answered Ack(error) or Ready(error) (a status is messages.ERROR)
VIOLATION = "violation"  # the receiver broke the protocol and was cut off
DIED = "died"  # its channel ended, or its lease expired
TIMEOUT = "timeout"  # it did not answer before the call's timeout

#: What a message says before the call that fixes its error, when the caller can fix it (issue 39).
FIX = "Fix: "
#: The remedy of each cause (SEND-7, spec 8.4); an error of several causes names each one's.
RESTART = ("restart it: sender.handle(i) or its URL for a new worker, then sender.connect(workers=[i]); "
           "or leave it out of workers=")
REMEDIES = {
    ANSWERED_ERROR: "fix what .details names in that worker (its target, say); the next sender.send() repairs it",
    VIOLATION: RESTART,
    DIED: RESTART,
    TIMEOUT: "sender.drop(i) cuts off a receiver that stopped answering; give a slow one a longer timeout= or wait() again",
}
#: A timeout that names no receiver: another thread held the sender (API-7).
LONGER_TIMEOUT = "pass a longer timeout="


def clip(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, its middle cut so that the remedy at its end survives."""
    if len(text) <= limit:
        return text
    at = text.rfind(FIX)
    tail = text[at:] if 0 <= at and len(text) - at <= limit // 2 else ""
    return text[: limit - len(tail) - 5] + " ... " + tail


def remedy_of(causes: Iterable[str]) -> str:
    """The remedy of each of `causes`, each labelled with its causes when they differ (SEND-7)."""
    by_text: dict[str, list[str]] = {}
    for cause in (ANSWERED_ERROR, VIOLATION, DIED, TIMEOUT):
        if cause in causes:
            by_text.setdefault(REMEDIES[cause], []).append(cause)
    if len(by_text) <= 1:
        return next(iter(by_text), RESTART)
    return ". ".join(f"[{'/'.join(kinds)}] {text}" for text, kinds in by_text.items())


class WeightSyncError(Exception):
    """Base of every error this package raises on purpose: `except weightsync.WeightSyncError`.

    Every message says what happened and, when the caller can fix it, ends with
    "Fix: " and the call that fixes it. A class whose errors are fixed the same way
    wherever they are raised has a `remedy`, which its message ends with; the others
    name theirs where they are raised.
    """

    remedy = ""

    def __str__(self) -> str:
        text = super().__str__()
        if not self.remedy:
            return text
        return f"{text}{'' if not text or text.endswith('.') else '.'} {FIX}{self.remedy}".lstrip()


class ProtocolError(WeightSyncError):
    """A call or a message that is illegal in the current state: a LocalProtocolError or a RemoteProtocolError."""


class LocalProtocolError(ProtocolError):
    """The caller made a call that the current state does not allow; nothing changed.

    For example `poll()` on a push receiver, `url(i)` on a sender that does not listen, or
    `handle(i)` for a receiver that is connected.
    """


class RemoteProtocolError(ProtocolError):
    """A peer sent what the protocol forbids: names the state, the event and the requirement.

    Attributes:
        state (str): the state the message arrived in, as the spec's state machines name it.
        event (str): the message or event that broke the protocol.
        requirement (str): the ID of the requirement it broke, such as "WIRE-3".
        peer (int | None): the receiver id on the sender's side; None on a receiver's side,
            whose peer is the sender.
    """

    def __init__(self, text: str, *, state: str = "", event: str = "", requirement: str = "", peer: int | None = None):
        super().__init__(text)
        self.text = text
        self.state = state  # filled in by the driver when the codec found the fault
        self.event = event
        self.requirement = requirement
        self.peer = peer

    def __str__(self) -> str:
        where = ", ".join(f"{k} {v!r}" for k, v in (("in state", self.state), ("event", self.event)) if v)
        rid = f" ({self.requirement})" if self.requirement and f"({self.requirement})" not in self.text else ""
        return f"{where}: {self.text}{rid}" if where else f"{self.text}{rid}"

    def __reduce__(self) -> tuple[Callable[..., RemoteProtocolError], tuple[str, str, str, str, int | None]]:
        return (_rebuild_remote, (self.text, self.state, self.event, self.requirement, self.peer))


def _rebuild_remote(text: str, state: str, event: str, requirement: str, peer: int | None) -> RemoteProtocolError:
    return RemoteProtocolError(text, state=state, event=event, requirement=requirement, peer=peer)


class ClosedError(WeightSyncError):
    """A call on a Sender or Receiver that was closed, or a wait that close() interrupted (LIFE-6).

    Also raised by `receiver.connect()` when the sender closed or is gone before the
    handshake.
    """

    remedy = "a closed one stays closed: make a new Sender(...), or a new Receiver(...) from a live sender's handle or URL"


class RefusedError(WeightSyncError, PermissionError):
    """The sender refused a receiver that joined by URL: unknown id, wrong secret, or the id is live (RDV-4).

    Also a `PermissionError`.
    """

    remedy = ("join with the URL sender.url(i) returned, unchanged (its id and secret); a live id first needs "
              "its old process gone or sender.drop(i)")


class WeightsMismatchError(WeightSyncError, ValueError):
    """Weights that do not match the manifest (names, dtypes, shapes, devices); nothing was written.

    Raised by a send given such weights, before any byte of any slot changes and without
    using a version, and by `receiver.connect()` for a target that does not match. Also a
    `ValueError`.
    """


class _ReceiversError(WeightSyncError):
    """An error about some receivers and one version: every receiver at fault, each with why."""

    reason = "failed"

    def __init__(
        self,
        workers: Iterable[int],
        version: int | None,
        details: Mapping[int, str] | None = None,
        hint: str = "",
        causes: Mapping[int, str] | None = None,
    ):
        self.workers = sorted(workers)
        self.version = version
        self.details = dict(details or {})
        self.causes = dict(causes) if causes is not None else {w: self.default_cause for w in self.workers}
        what = f"version {version}" if version is not None else "no version published"
        msg = f"receiver(s) {self.workers} {self.reason} ({what})"
        if self.details:
            msg += ": " + "; ".join(f"{w} [{self.causes.get(w, '?')}]: {d}" for w, d in sorted(self.details.items()))
        if hint:
            msg += f". {hint}"
        if FIX not in hint:  # the call that fixes it, unless the raise site named its own
            kinds = set(self.causes.values()) or {self.default_cause}
            msg += f". {FIX}{LONGER_TIMEOUT if not self.workers and kinds == {TIMEOUT} else remedy_of(kinds)}"
        super().__init__(msg)

    default_cause = ANSWERED_ERROR

    def __reduce__(self) -> tuple[Callable[..., _ReceiversError], tuple[object, ...]]:
        return (_rebuild, (type(self), self.workers, self.version, self.details, self.causes, self.args))


def _rebuild(cls: type[_ReceiversError], workers: list[int], version: int | None, details: dict[int, str],
             causes: dict[int, str], args: tuple[object, ...]) -> _ReceiversError:
    err = cls.__new__(cls)
    WeightSyncError.__init__(err, *args)
    err.workers, err.version, err.details, err.causes = workers, version, details, causes
    return err


class SyncTimeoutError(_ReceiversError, TimeoutError):
    """Receivers did not answer within the timeout (SEND-2), or the call could not proceed in time.

    Also a `TimeoutError`. The receivers named may still ack: `future.wait()` again.
    With no receiver named, another thread held the sender past the timeout.

    Attributes:
        workers (list[int]): the ids of every receiver at fault, sorted.
        version (int | None): the version concerned, or None when nothing was published.
        details (dict[int, str]): receiver id -> what happened to it, in words.
        causes (dict[int, str]): receiver id -> "error", "violation", "died" or "timeout".
    """

    reason = "did not answer in time"
    default_cause = TIMEOUT


class ReceiverError(_ReceiversError):
    """Receivers reported that they could not apply a version, or broke the protocol (ACK-6).

    A receiver that reported an error (cause "error") is repaired by the next send that
    it applies; one that broke the protocol (cause "violation") was cut off.

    Attributes:
        workers (list[int]): the ids of every receiver at fault, sorted.
        version (int | None): the version concerned, or None when nothing was published.
        details (dict[int, str]): receiver id -> what happened to it, in words.
        causes (dict[int, str]): receiver id -> "error", "violation", "died" or "timeout".
    """

    reason = "reported an error"
    default_cause = ANSWERED_ERROR


class ReceiverDiedError(_ReceiversError):
    """Receivers whose channel ended (the process exited or closed) or whose lease expired (SEND-3).

    Noticed from the end of the channel, not after a timeout. Restart one with
    `sender.handle(i)` or its URL, then `sender.connect(workers=[i])`.

    Attributes:
        workers (list[int]): the ids of every receiver at fault, sorted.
        version (int | None): the version concerned, or None when nothing was published.
        details (dict[int, str]): receiver id -> what happened to it, in words.
        causes (dict[int, str]): receiver id -> "error", "violation", "died" or "timeout".
    """

    reason = "are gone"
    default_cause = DIED


class ReceiverErrorAndDied(ReceiverError, ReceiverDiedError):
    """Some receivers reported an error or broke the protocol, others are gone (SEND-7)."""

    reason = "failed (errors and deaths)"


class ReceiverErrorAndTimeout(ReceiverError, SyncTimeoutError):
    """Some receivers reported an error or broke the protocol, others did not answer in time (SEND-7)."""

    reason = "failed (errors and timeouts)"


class ReceiverDiedAndTimeout(ReceiverDiedError, SyncTimeoutError):
    """Some receivers are gone, others did not answer in time (SEND-7)."""

    reason = "failed (deaths and timeouts)"


class ReceiverErrorDiedAndTimeout(ReceiverError, ReceiverDiedError, SyncTimeoutError):
    """Receivers failed in all three ways in one call (SEND-7)."""

    reason = "failed (errors, deaths and timeouts)"


_BY_KINDS = {
    frozenset({ReceiverError}): ReceiverError,
    frozenset({ReceiverDiedError}): ReceiverDiedError,
    frozenset({SyncTimeoutError}): SyncTimeoutError,
    frozenset({ReceiverError, ReceiverDiedError}): ReceiverErrorAndDied,
    frozenset({ReceiverError, SyncTimeoutError}): ReceiverErrorAndTimeout,
    frozenset({ReceiverDiedError, SyncTimeoutError}): ReceiverDiedAndTimeout,
    frozenset({ReceiverError, ReceiverDiedError, SyncTimeoutError}): ReceiverErrorDiedAndTimeout,
}
_CLASS_OF = {ANSWERED_ERROR: ReceiverError, VIOLATION: ReceiverError, DIED: ReceiverDiedError, TIMEOUT: SyncTimeoutError}


def receivers_error(
    causes: Mapping[int, str], details: Mapping[int, str], version: int | None, hint: str = ""
) -> _ReceiversError:
    """The one error for a set of failed receivers, naming all of them (SEND-7).

    It is an instance of the class of every kind of failure among them: ReceiverError
    (error, violation), ReceiverDiedError (died), SyncTimeoutError (timeout), so an
    `except` for any of those kinds catches it; `causes` says which receiver is which.
    """
    cls = _BY_KINDS[frozenset(_CLASS_OF[c] for c in causes.values())]
    return cls(causes, version, details, hint=hint, causes=causes)
