"""The joiner tries again only when a connection closes before Hello; one that closes after its Join with neither
Welcome nor Refuse is taken as the sender's final answer and connect() raises ClosedError at once, although RDV-6
(a flood of joins dropped it, or its join ran out of time) says to try again until connect()'s timeout."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
import hmac as _hmac
import secrets as _secrets
from weightsync import limits as _limits
from weightsync import rendezvous as _rdv
from weightsync.errors import ClosedError as _ClosedError, RefusedError as _RefusedError, SyncTimeoutError as _STE
from weightsync.join import JoinMachine as _JoinMachine
from weightsync.messages import Join as _Join, Refuse as _Refuse

VIOLATES = ("RDV-6",)


def _join(ch, address, rid, secret, deadline):
    machine = _JoinMachine(listener=False)
    ch.session.attach(machine)
    hello = _rdv._expect(ch, deadline, rid, machine)
    if hello is None:
        return False  # closed before Hello: try again
    mine = _secrets.token_bytes(_limits.NONCE_BYTES)
    if not ch.send_bounded(_Join(rid, mine, _rdv.proof(secret, _rdv.JOIN, hello.nonce, mine, rid)), deadline):
        raise _STE([rid], None, hint="the sender did not read the join (RDV-6)")
    machine.judge = lambda m: None if _hmac.compare_digest(m.proof, _rdv.proof(secret, _rdv.WELCOME, hello.nonce, mine, rid)) \
        else "the sender could not prove that it knows the secret"
    answer = _rdv._expect(ch, deadline, rid, machine)
    if answer is None:  # BUG: closed after our Join is taken as final instead of tried again
        raise _ClosedError(f"receiver {rid}: the sender at {address.text} closed the join without an answer")
    if isinstance(answer, _Refuse):
        raise _RefusedError(f"receiver {rid}: the sender at {address.text} refused the join: {answer.detail} (RDV-4)")
    return True


_rdv._join = _join
