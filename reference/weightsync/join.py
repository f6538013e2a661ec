"""The join by URL as a pure machine (spec/14-rendezvous.md, Table 14-1): both ends, no socket.

rendezvous.py does the join's I/O and asks `JoinMachine` what each message and each
non-message event (the join bound, a closed connection) means.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from . import wire
from .errors import RemoteProtocolError
from .messages import PROTOCOL_VERSION
from .protocol import same_major


class JoinState(str, Enum):
    """One joining connection, as either end sees it."""

    HELLO = "hello"  # the listener sent Hello; the joiner waits for it
    JOINING = "joining"  # the joiner sent Join; it waits for Welcome or Refuse
    JOINED = "joined"  # Welcome: Init and Part I follow on this connection
    ENDED = "ended"  # refused, timed out, closed, or broken: the connection closes


_J = JoinState
JOIN_TABLE: dict[tuple[JoinState, str], JoinState] = {
    (_J.HELLO, "recv Join(valid)"): _J.JOINED,  # listener: sends Welcome, then Init (RDV-5)
    (_J.HELLO, "recv Join(refused)"): _J.ENDED,  # listener: sends Refuse (RDV-4, RDV-5)
    (_J.HELLO, "join bound"): _J.ENDED,  # listener: no Join within the reaction bound (RDV-6)
    (_J.HELLO, "recv Hello"): _J.JOINING,  # joiner: sends Join (RDV-3)
    (_J.JOINING, "recv Welcome(valid)"): _J.JOINED,  # joiner: the sender proved the secret (RDV-7)
    (_J.JOINING, "recv Refuse"): _J.ENDED,  # joiner: RefusedError (RDV-4)
    (_J.HELLO, "channel closed"): _J.ENDED,  # either: a joiner tries again until its timeout (RDV-6)
    (_J.JOINING, "channel closed"): _J.ENDED,
}


def join_event(msg: object, valid: bool = True) -> str:
    """The join table's event for a message; `valid` says whether its proof checks out (RDV-3, RDV-7)."""
    name = type(msg).__name__
    if name in ("Join", "Welcome"):
        return f"recv {name}({'valid' if valid else 'refused' if name == 'Join' else 'invalid'})"
    return f"recv {name}"


class JoinMachine:
    """One end of a join by URL: `listener=True` for the sender's side, False for the joiner's (RDV-3..RDV-7).

    Anything the table does not list is a violation: RDV-3 for the order of the
    messages, RDV-7 for a Welcome whose proof is wrong, INIT-2 for a Hello of another major.
    """

    def __init__(self, listener: bool):
        self.listener = listener
        self.state = JoinState.HELLO
        #: Why a Join (at the listener) or a Welcome (at the joiner) is refused, None when it is not: its proof, and
        #: at the listener whether that receiver may join now (RDV-3, RDV-5, RDV-7). The driver, which holds the
        #: secrets, gives it; the session's call of `handle` then judges the message with it.
        self.judge: Callable[[object], str | None] = lambda msg: "refused: no proof can be judged here yet"
        self.refusal: str | None = None

    def after(self) -> tuple[tuple, int]:
        """What the connection carries once joined: the other side's messages of Part I, in frames up to WIRE-2's
        bound instead of the small one before the proof (RDV-9). The session switches to it by itself."""
        return (wire.FROM_RECEIVER, wire.MAX_TO_SENDER) if self.listener else (wire.FROM_SENDER, wire.MAX_TO_RECEIVER)

    @property
    def joined(self) -> bool:
        """Welcome sent (listener) or accepted (joiner): Init and Part I follow on this connection (RDV-5, RDV-7)."""
        return self.state is JoinState.JOINED

    def handle(self, msg: object, valid: bool | None = None) -> JoinState:
        """The step for a message of the join; `valid` says whether a Join or a Welcome holds, by default what
        `judge` says (its reason kept in `refusal`)."""
        if valid is None:
            self.refusal = self.judge(msg) if type(msg).__name__ in ("Join", "Welcome") else None
            valid = self.refusal is None
        event = join_event(msg, valid)
        if not self.listener and type(msg).__name__ == "Hello" and not same_major(
                getattr(msg, "protocol", ""), PROTOCOL_VERSION):
            raise RemoteProtocolError(f"the sender speaks protocol {getattr(msg, 'protocol', '')}, this receiver "
                                      f"{PROTOCOL_VERSION}", state="new", event=event, requirement="INIT-2")
        return self._step(event)

    def event(self, event: str) -> JoinState:
        """A non-message event: "join bound" or "channel closed"."""
        return self._step(event)

    def _step(self, event: str) -> JoinState:
        mine = event in _LISTENER_EVENTS if self.listener else event not in _LISTENER_ONLY
        nxt = JOIN_TABLE.get((self.state, event)) if mine else None
        if nxt is None:
            rule = "RDV-7" if event == "recv Welcome(invalid)" and self.state is JoinState.JOINING else "RDV-3"
            text = ("the sender could not prove that it knows the secret" if rule == "RDV-7"
                    else f"{event[5:] if event.startswith('recv ') else event} during the join, in state {self.state.value}")
            self.state = JoinState.ENDED
            raise RemoteProtocolError(text, state="new", event=event, requirement=rule)
        self.state = nxt
        return nxt


_LISTENER_ONLY = frozenset({"recv Join(valid)", "recv Join(refused)", "join bound"})
_LISTENER_EVENTS = _LISTENER_ONLY | {"channel closed"}
