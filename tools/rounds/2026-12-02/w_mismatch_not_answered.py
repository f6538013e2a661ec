"""Bug: a receiver whose target does not match the Init's manifest raises WeightsMismatchError from `connect()`
without answering the Init: no Ready(error) goes out. The trainer's `sender.connect()` is not told: it waits until
its timeout and raises SyncTimeoutError ("did not answer"), or, once the worker's `with Receiver(...)` block closes
the receiver (or its process exits on the error), ReceiverDiedError; either way without the mismatch's detail, and
as a worker that hung or crashed rather than one built for another model. A careful implementer could have written
it: INIT-3 reads as a check the worker makes for itself ("the receiver checks the layout before it reads any byte,
so that a worker built for a different model fails loudly at connect"), and they answered Ready(error) only where
INIT-6 asks for it, for an apply that failed, treating a mismatch as the worker's own bug raised to the worker.
Breaks INIT-3 ("At connect, a mismatch answers Ready(error, detail); `receiver.connect` raises WeightsMismatchError,
and `sender.connect` raises ReceiverError naming that receiver") and INIT-5 ("for one that answered Ready(error),
ReceiverError, without waiting for the timeout").
"""
import logging

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, apply, devices, handshake, receiver, rendezvous  # noqa: F401
from weightsync.clock import Deadline
from weightsync.errors import (
    FIX,
    ClosedError,
    LocalProtocolError,
    ReceiverError,
    RemoteProtocolError,
    WeightsMismatchError,
)
from weightsync.messages import OK, Ready
from weightsync.pending import SOURCES

VIOLATES = ("INIT-3", "INIT-5")
log = logging.getLogger("weightsync")


def connect(self, timeout=None):
    """Wait for Init, check the target, apply the current version, answer Ready (INIT-*)."""
    self._check_open()
    deadline = Deadline(timeout, self._clock)
    applier = self._applier
    if not self._machine.awaiting_init or applier.init is not None:
        raise LocalProtocolError(f"receiver {self.id} is {self._machine.state.value}; connect() is called once")
    if applier.channel is None:
        assert self._url is not None, "a receiver made without a channel joins by URL"
        try:
            applier.channel, _ = rendezvous.dial(self._url, deadline)
            applier.channel.session.attach(self._machine)
        except RemoteProtocolError as e:
            applier.broken(e)
            raise
    channel = applier.channel
    try:
        msg, fds = handshake.await_init(channel, self._machine, deadline)
    except RemoteProtocolError as e:
        applier.broken(e)
        raise
    applier.init = msg
    profile = self._machine.profile
    try:
        self._machine.check_init(msg)  # INIT-2, MSG-2
        pending = self._pending = SOURCES[type(profile)](channel, self._machine, msg, self.zero_copy, applier,
                                                         lambda: self._closing, self._wake.r)
        buffer = pending.setup(fds, deadline)
        msg = applier.init
        device = devices.target_device(self._target, self.zero_copy) if profile.host_memory else None
        made = msg if device is None else devices.with_device(msg, device)
        applier.strategy = apply.make(self.id, made, self._target, self.zero_copy, {msg.slot: applier.mapped[buffer]})
        applier.apply(msg.version, buffer)
    except WeightsMismatchError:
        raise  # BUG: the worker's own target is wrong: raised to the worker, the Init left unanswered
    except RemoteProtocolError as e:
        self._refuse(str(e), deadline)
        raise
    except Exception as e:  # noqa: BLE001 - whatever stopped the apply is reported (INIT-6)
        detail = f"{type(e).__name__}: {e}"
        self._refuse(detail, deadline)
        raise ReceiverError(
            [self.id], msg.version, {self.id: detail}, hint=f"the Init's version could not be applied (INIT-6). "
            f"{FIX}fix what the detail names, then make a new Receiver(...) from a new sender.handle(i) or the URL"
        ) from e
    ready = Ready(self.id, msg.version, OK, holds_slot=self.zero_copy, capabilities=profile.capabilities)
    if not applier.answer(ready, deadline):
        raise ClosedError(f"receiver {self.id}: the sender closed during the handshake")
    self._machine.accept_init(msg.version)
    applier.applied(msg.version)
    pending.start(buffer)
    if self.mode == "push":
        import threading
        self._thread = threading.Thread(target=applier.run, args=(self._pending,),
                                        name=f"weightsync-receiver-{self.id}", daemon=True)
        self._thread.start()
    log.debug("receiver %d connected at version %d", self.id, msg.version)
    return msg.version


receiver.Receiver.connect = connect
