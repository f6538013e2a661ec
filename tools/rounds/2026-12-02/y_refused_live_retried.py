"""Bug: a receiver joining by URL takes the sender's refusal "receiver i is live" as a passing state and tries the
join again until its `connect()` timeout, instead of raising RefusedError. A second process started by mistake with
a URL already in use (a launcher that starts a worker twice, a supervisor that restarts a worker that was only
slow) does not fail: `connect(timeout=None)` retries for ever, and with a timeout it raises SyncTimeoutError ("no
answer") instead of saying it was refused. If the live worker later goes away, the stray process silently takes
its place. A careful implementer could have written it from RDV-5's "A restart is therefore a new process given the
same URL": a new process may come up before the sender has seen the old one go (it is still "live"), and RDV-6 has
the joiner try again "until that timeout" when a join is not answered; the "live" refusal was lumped in with those
passing conditions. Breaks RDV-4 ("A receiver that is refused raises RefusedError from connect()"), RDV-7 ("Refuse
is RefusedError") and API-3 ("for a URL, RefusedError when the sender refused the join").
"""
import hmac
import secrets

import weightsync  # noqa: F401
import weightsync.rendezvous as _rdv
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, limits  # noqa: F401
from weightsync.errors import RefusedError, SyncTimeoutError
from weightsync.join import JoinMachine
from weightsync.messages import Join, Refuse

VIOLATES = ("RDV-4", "RDV-7", "API-3")


def _join(ch, address, rid, secret, deadline):
    machine = JoinMachine(listener=False)
    ch.session.attach(machine)
    hello = _rdv._expect(ch, deadline, rid, machine)
    if hello is None:
        return False
    mine = secrets.token_bytes(limits.NONCE_BYTES)
    if not ch.send_bounded(Join(rid, mine, _rdv.proof(secret, _rdv.JOIN, hello.nonce, mine, rid)), deadline):
        raise SyncTimeoutError([rid], None, hint="the sender did not read the join (RDV-6)")
    machine.judge = lambda m: None if hmac.compare_digest(m.proof, _rdv.proof(secret, _rdv.WELCOME, hello.nonce, mine, rid)) \
        else "the sender could not prove that it knows the secret"
    answer = _rdv._expect(ch, deadline, rid, machine)
    if answer is None:
        return False
    if isinstance(answer, Refuse):
        if "live" in answer.detail:  # BUG: the old process may be on its way out: try again, as RDV-6 does
            return False
        raise RefusedError(f"receiver {rid}: the sender at {address.text} refused the join: {answer.detail} (RDV-4)")
    return True


_rdv._join = _join
