"""Bug: a receiver whose apply of the Init's version fails for a reason that is no refusal of INIT-2/INIT-3 (the
target raises while it is written, a slot cannot be mapped, memory runs out) answers nothing: `receiver.connect()`
lets the raw exception out (a RuntimeError, not ReceiverError) and no Ready(error) goes out, so the trainer's
`sender.connect()` waits for its whole timeout and then raises SyncTimeoutError ("did each worker start?"), or
waits for ever with `timeout=None`, while the worker process lives on. The commonest way to meet it: a worker
that builds its model under `torch.inference_mode()` (inference tensors refuse in-place writes). A careful
implementer could have written it from INIT-2 and INIT-3, which list the refusals a receiver answers with
Ready(error), and caught those two; anything else looked like a crash of the worker, which the sender sees as
the end of the channel. Breaks INIT-6 ("MUST answer Ready(error, detail) and move to failed. `receiver.connect`
then raises ReceiverError naming its own id ... and `sender.connect` raises ReceiverError naming that receiver")
and INIT-5 (sender.connect raises ReceiverError "without waiting for the timeout").
"""
import logging
import threading

import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, apply, devices, handshake, receiver, rendezvous  # noqa: F401
from weightsync.clock import Deadline
from weightsync.errors import ClosedError, LocalProtocolError, RemoteProtocolError, WeightsMismatchError
from weightsync.messages import OK, Ready
from weightsync.pending import SOURCES

VIOLATES = ("INIT-6", "INIT-5")
log = logging.getLogger("weightsync")


def connect(self, timeout=None):
    self._check_open()
    deadline = Deadline(timeout, self._clock)
    applier = self._applier
    if not self._machine.awaiting_init or applier.init is not None:
        raise LocalProtocolError(f"receiver {self.id} is {self._machine.state.value}; connect() is called once")
    if applier.channel is None:
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
        self._machine.check_init(msg)
        pending = self._pending = SOURCES[type(profile)](channel, self._machine, msg, self.zero_copy, applier,
                                                         lambda: self._closing, self._wake.r)
        buffer = pending.setup(fds, deadline)
        msg = applier.init
        device = devices.target_device(self._target, self.zero_copy) if profile.host_memory else None
        made = msg if device is None else devices.with_device(msg, device)
        applier.strategy = apply.make(self.id, made, self._target, self.zero_copy, {msg.slot: applier.mapped[buffer]})
        applier.apply(msg.version, buffer)
    except (WeightsMismatchError, RemoteProtocolError) as e:  # BUG: only the refusals of INIT-2/INIT-3 are answered
        self._refuse(str(e), deadline)
        raise
    ready = Ready(self.id, msg.version, OK, holds_slot=self.zero_copy, capabilities=profile.capabilities)
    if not applier.answer(ready, deadline):
        raise ClosedError(f"receiver {self.id}: the sender closed during the handshake")
    self._machine.accept_init(msg.version)
    applier.applied(msg.version)
    pending.start(buffer)
    if self.mode == "push":
        self._thread = threading.Thread(target=applier.run, args=(self._pending,),
                                        name=f"weightsync-receiver-{self.id}", daemon=True)
        self._thread.start()
    log.debug("receiver %d connected at version %d", self.id, msg.version)
    return msg.version


receiver.Receiver.connect = connect
