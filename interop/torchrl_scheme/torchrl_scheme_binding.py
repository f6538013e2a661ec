"""TorchRL 0.14.1's ``SharedMemWeightSyncScheme`` presented through the weightsync binding (spec 10).

An adapter, not an implementation: TorchRL shares the buffer, sends the instructions and
acks; this module only translates calls, so that the conformance suite judges TorchRL's
behaviour and nothing of ours. Where TorchRL does not do what the spec asks, neither does
this module. One line per decision, binding call -> TorchRL call:

- ``Sender(module, N)`` -> ``scheme.init_on_sender(model=module, devices=[d] * N, ctx=...)``, with
  ``SharedMemWeightSyncScheme(sync=False)`` so that the ack wait can be given the caller's timeout (below).
- ``Sender(tensordict, N)`` -> ``init_on_sender(weights=tensordict, ...)``; a ``Mapping`` -> the same over
  ``TensorDict(mapping).unflatten_keys(".")``, the conversion TorchRL applies to dict weights itself.
  TorchRL shares these tensors' own storage: the trainer's weights become the workers' buffer.
- ``devices`` -> TorchRL's ``devices`` list (a callable is called per receiver id); None: the weights' device.
- ``ctx`` -> TorchRL's ``ctx``, wrapped so that ``ctx.Queue()`` gives a one-writer, one-reader queue over a
  ``Pipe``: TorchRL's ``mp.Queue`` can only be inherited at process start, and the binding hands a handle to a
  process that is already running (API-3). Like ``mp.Queue``, each end stays open in every process holding it,
  so no side ever sees the other's end of channel. A fork context is not refused (TorchRL takes any).
- ``max_slots``, ``max_slot_bytes``, ``dtypes``: taken and ignored; TorchRL has one shared buffer, of the
  weights' own dtypes. ``listen`` raises ValueError: TorchRL has no listening address (no ``rendezvous``).
- ``sender.handle(i)`` -> a ``Handle`` holding the scheme itself and ``i``: TorchRL ships the whole pickled
  scheme to every worker, every worker's queues and the shared buffer included. No check on ``i``, and a
  handle may be pickled any number of times. A ``Receiver`` made in the trainer's own process from a handle
  that was never pickled gets a pickled copy all the same, as a worker would: TorchRL's one object turns
  into a receiver when ``init_on_receiver`` runs on it, which would end the sender. A child that inherited
  the handle by fork uses the inherited object, as TorchRL would.
- ``sender.connect()`` -> ``scheme.connect()`` on its first call (TorchRL puts the buffer on every worker's
  init queue and returns at once: it has no Ready step); later calls return at once, since TorchRL's one
  connect covers every worker and it refuses a second one. ``timeout`` and ``workers`` are not used.
- ``sender.send(weights, workers=, timeout=)`` -> ``scheme.send(weights, worker_ids=workers)`` (TorchRL writes
  the shared buffer in place, then puts "receive" on each target's instruction queue), then TorchRL's own ack
  wait ``scheme._wait_for_ack(worker_ids, timeout=timeout)``: with ``timeout=None`` this is exactly TorchRL's
  ``sync=True`` send. TorchRL never raises there: a missing ack is logged as a warning and the send returns.
  So no SyncTimeoutError, ReceiverError or ReceiverDiedError is ever raised by a send.
- ``weights=None`` -> ``scheme.send(None)``: TorchRL writes nothing (the buffer already is the trainer's object).
- ``sender.version`` -> a counter on the trainer side, +1 when ``scheme.send`` returned (TorchRL has none);
  a lock keeps ``scheme.send`` and the count together, so that versions follow the order of the writes.
- ``send_async`` -> ``scheme.send`` without the ack wait; ``future.wait(t)`` -> ``_wait_for_ack(targets, t)``
  once (later waits return at once); ``future.done()`` is true only after a ``wait()`` returned: TorchRL has no
  look at its ack queues that does not consume them.
- ``sender.close()`` -> ``scheme.shutdown()`` ("stop" on every instruction queue, queues closed);
  ``sender.closed`` -> TorchRL's ``_is_shutdown``. No ClosedError: calls after close do what TorchRL does.
- ``sender.drop(i)``: not mapped (TorchRL cannot cut a worker off), so ``drop`` is not declared.
- ``Receiver(handle, target)`` -> ``scheme.init_on_receiver(model_id="policy", context=c)``, where ``c`` plays the
  collector TorchRL expects as a worker's context: ``c.worker_idx``, ``c.get_model()`` giving the target, and
  ``c.update_policy_weights_()``, TorchRL's hook after each apply, counting applies (below).
- target ``nn.Module`` or ``TensorDict`` -> TorchRL's model, as is. TorchRL's connect rebinds its tensors to the
  shared buffer (``inplace=False``); its later applies copy the buffer into them in place.
- target None -> an empty ``TensorDict`` as TorchRL's model, which TorchRL's connect fills with the shared
  buffer's tensors: no copy, as TorchRL keeps none.
- target any other ``Mapping`` -> TorchRL's model, as is: TorchRL refuses it at connect (a dict already when
  made: it cannot be weak-referenced). Not converted: TorchRL would rebind the converted copy, never write the
  caller's mapping.
- ``receiver.connect(timeout)`` -> ``scheme.connect(worker_idx=i)``: TorchRL reads its init queue with its own
  timeout (``WEIGHT_SYNC_TIMEOUT``, 60 s), not the caller's; its ``queue.Empty`` -> SyncTimeoutError. Returns
  the apply count: 0, or more when TorchRL's thread already applied instructions waiting in its queue.
- ``receiver.version`` -> the number of applies TorchRL reported through ``update_policy_weights_``, as a
  TorchRL collector's policy version counts them; None before connect. Not the sender's version: TorchRL
  sends none.
- ``receiver.weights`` -> the model's tensors (``TensorDict.from_module`` or the TensorDict's leaves, nested
  keys joined with "."), read as they are now: for TorchRL they are the shared buffer.
- ``receiver.reading()`` -> nothing (a bare context manager): TorchRL has no safe point to wait for.
- ``receiver.poll()`` -> LocalProtocolError: TorchRL applies in its background thread only (push).
- ``mode="pull"`` and ``zero_copy=True`` -> ValueError (neither is declared).
- ``receiver.stopped`` -> closed, or connected and TorchRL's background thread has ended (after "stop").
- ``receiver.failure`` -> always None: TorchRL's background thread logs an error as a warning and goes on.
- ``receiver.close()`` -> ``scheme.shutdown()``. TorchRL's shutdown puts "stop" on every instruction queue the
  scheme holds, and a worker's copy holds every worker's; so does TorchRL's ``__del__``.
- The errors: the classes of API-4, defined here since TorchRL has none; only SyncTimeoutError is raised.

Not declared, since not real: pull, zero_copy (the shared tensors are neither read-only nor versioned
slots), cuda (not run), rendezvous, network, pack, hooks, cast, drop, wire (a Handle has no ``fileno()``).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import threading
import time
from collections.abc import Mapping
from multiprocessing.reduction import ForkingPickler
from types import MappingProxyType

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.weight_update import SharedMemWeightSyncScheme

PROTOCOL_VERSION = "1.1"
__version__ = "0.1"
CAPABILITIES = frozenset({"push", "module", "tensordict"})

#: The model id the adapter gives TorchRL on the worker side (what a collector names its policy).
_MODEL_ID = "policy"


# ---- errors (API-4) ----------------------------------------------------------------------------


class WeightSyncError(Exception):
    pass


class _ReceiversError(WeightSyncError):
    def __init__(self, message, *, workers=(), version=None, details=None, causes=None):
        super().__init__(message)
        self.workers = sorted(workers)
        self.version = version
        self.details = dict(details or {})
        self.causes = dict(causes or {})


class SyncTimeoutError(_ReceiversError, TimeoutError):
    pass


class ReceiverError(_ReceiversError):
    pass


class ReceiverDiedError(_ReceiversError):
    pass


class ProtocolError(WeightSyncError):
    pass


class LocalProtocolError(ProtocolError):
    pass


class RemoteProtocolError(ProtocolError):
    def __init__(self, message, *, state=None, event=None, requirement=None):
        super().__init__(message)
        self.state, self.event, self.requirement = state, event, requirement


class ClosedError(WeightSyncError):
    pass


class RefusedError(WeightSyncError, PermissionError):
    pass


class WeightsMismatchError(WeightSyncError, ValueError):
    pass


# ---- the queues TorchRL is given ---------------------------------------------------------------


class _PipeQueue:
    """``put``/``get(timeout)``/``close``/``join_thread`` over one ``Pipe``, picklable to a running process.

    Both ends travel with the object, as both of an ``mp.Queue``'s do, so a reader never sees end of file.
    """

    def __init__(self, ctx):
        self._reader, self._writer = ctx.Pipe(duplex=False)
        self._locks()

    def _locks(self):
        self._rlock, self._wlock = threading.Lock(), threading.Lock()

    def __getstate__(self):
        return self._reader, self._writer

    def __setstate__(self, state):
        self._reader, self._writer = state
        self._locks()

    def put(self, obj, block=True, timeout=None):
        with self._wlock:
            self._writer.send(obj)

    def get(self, block=True, timeout=None):
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        if not self._rlock.acquire(True, -1 if timeout is None else max(timeout, 0.0)):
            raise queue.Empty
        try:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not self._reader.poll(left):
                raise queue.Empty
            return self._reader.recv()
        finally:
            self._rlock.release()

    def close(self):
        self._reader.close()
        self._writer.close()

    def join_thread(self):
        pass


class _QueueContext:
    """The ``ctx`` TorchRL's ``init_on_sender`` takes; TorchRL calls only its ``Queue()``."""

    def __init__(self, ctx):
        self._ctx = ctx

    def Queue(self):  # noqa: N802 - the name TorchRL calls
        return _PipeQueue(self._ctx)


# ---- sender --------------------------------------------------------------------------------------


class Handle:
    """What a worker process is given: TorchRL's scheme (pickled whole, as TorchRL ships it) and the id."""

    def __init__(self, scheme, worker_idx: int):
        self.scheme = scheme
        self.worker_idx = worker_idx
        self._shipped = False
        self._pid = os.getpid()

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._shipped = True

    def worker_scheme(self):
        """The worker's scheme: the copy unpickled here; the object itself in a child that inherited it by
        fork (TorchRL turns it into a receiver there); in the trainer's own process, a copy pickled now."""
        if self._shipped or os.getpid() != self._pid:
            return self.scheme
        return ForkingPickler.loads(ForkingPickler.dumps(self.scheme))


class SendFuture:
    def __init__(self, scheme, version: int, workers: list[int]):
        self._scheme = scheme
        self.version = version
        self.workers = workers
        self._waited = False

    def wait(self, timeout=None) -> int:
        if not self._waited:
            self._scheme._wait_for_ack(worker_ids=self.workers, timeout=timeout)
            self._waited = True
        return self.version

    def done(self) -> bool:
        return self._waited


def _device_list(weights, num_workers, devices):
    if devices is None:
        first = next(iter(weights.values(True, True)), None)
        return [first.device if first is not None else torch.device("cpu")] * num_workers
    if callable(devices):
        return [torch.device(devices(i)) for i in range(num_workers)]
    return [torch.device(d) for d in devices]


def _as_tensordict(weights):
    """A mapping as TorchRL converts dict weights itself; modules and TensorDicts as they are."""
    if isinstance(weights, (torch.nn.Module, TensorDictBase)) or weights is None:
        return weights
    if isinstance(weights, Mapping):
        return TensorDict(dict(weights), batch_size=[]).unflatten_keys(".")
    return weights


class Sender:
    def __init__(self, weights, num_workers, *, devices=None, ctx=None, max_slots=None, listen=None,
                 max_slot_bytes=None, dtypes=None):
        if listen is not None:
            raise ValueError("TorchRL's SharedMemWeightSyncScheme has no listening address (no rendezvous)")
        self._num_workers = num_workers
        self._scheme = SharedMemWeightSyncScheme(sync=False)
        queues = _QueueContext(ctx if ctx is not None else mp.get_context("spawn"))
        if isinstance(weights, torch.nn.Module):
            td = TensorDict.from_module(weights)
            self._scheme.init_on_sender(model=weights, devices=_device_list(td, num_workers, devices), ctx=queues)
        else:
            td = _as_tensordict(weights)
            self._scheme.init_on_sender(weights=td, devices=_device_list(td, num_workers, devices), ctx=queues)
        self._version = 0
        self._lock = threading.Lock()

    def handle(self, i: int) -> Handle:
        return Handle(self._scheme, i)

    def connect(self, timeout=None, *, workers=None) -> None:
        with self._lock:
            if not self._scheme.synchronized_on_sender:
                self._scheme.connect()

    def _publish(self, weights, workers):
        targets = list(range(self._num_workers)) if workers is None else list(workers)
        with self._lock:
            self._scheme.send(weights=_as_tensordict(weights), worker_ids=None if workers is None else targets)
            self._version += 1
            return self._version, targets

    def send(self, weights=None, *, workers=None, timeout=None) -> int:
        version, targets = self._publish(weights, workers)
        self._scheme._wait_for_ack(worker_ids=targets, timeout=timeout)
        return version

    def send_async(self, weights=None, *, workers=None, timeout=None) -> SendFuture:
        version, targets = self._publish(weights, workers)
        return SendFuture(self._scheme, version, targets)

    @property
    def version(self) -> int:
        return self._version

    @property
    def closed(self) -> bool:
        return bool(getattr(self._scheme, "_is_shutdown", False))

    def close(self) -> None:
        self._scheme.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- receiver ------------------------------------------------------------------------------------


class _WorkerContext:
    """The worker-side context TorchRL's scheme expects (a collector's): the model, the id, the apply hook."""

    def __init__(self, worker_idx: int, model):
        self.worker_idx = worker_idx
        self._model = model
        self.applied = 0

    def get_model(self, model_id):
        return self._model

    def update_policy_weights_(self, model_id=None, policy_or_weights=None, **kwargs):
        self.applied += 1


class Receiver:
    def __init__(self, handle, target=None, *, mode="push", zero_copy=False):
        if mode != "push":
            raise ValueError(f"mode={mode!r}: TorchRL's scheme applies in its background thread only (push)")
        if zero_copy:
            raise ValueError("zero_copy=True is not offered: TorchRL's shared tensors are not read-only slot views")
        self._scheme = handle.worker_scheme()
        self._model = TensorDict() if target is None else target
        self._context = _WorkerContext(handle.worker_idx, self._model)
        self._connected = False
        self._closed = False
        self._scheme.init_on_receiver(model_id=_MODEL_ID, context=self._context)

    def connect(self, timeout=None) -> int:
        try:
            self._scheme.connect(worker_idx=self._context.worker_idx)
        except queue.Empty as e:
            i = self._context.worker_idx
            raise SyncTimeoutError(f"TorchRL's init queue of worker {i} stayed empty for its WEIGHT_SYNC_TIMEOUT",
                                   workers=[i], causes={i: "timeout"}) from e
        self._connected = True
        return self._context.applied

    @property
    def version(self):
        return self._context.applied if self._connected else None

    @property
    def weights(self):
        model = self._model
        if isinstance(model, torch.nn.Module):
            held = TensorDict.from_module(model).flatten_keys(".")
        elif isinstance(model, TensorDictBase):
            held = model.flatten_keys(".")
        else:
            held = model
        return MappingProxyType(dict(held.items()))

    @contextlib.contextmanager
    def reading(self, timeout=None):
        yield self

    def poll(self, timeout=0):
        raise LocalProtocolError("TorchRL's scheme applies in its background thread; there is nothing to poll")

    @property
    def stopped(self) -> bool:
        if self._closed:
            return True
        thread = getattr(self._scheme, "_background_thread", None)
        return self._connected and (thread is None or not thread.is_alive())

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def failure(self):
        return None

    def close(self) -> None:
        self._closed = True
        self._scheme.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
