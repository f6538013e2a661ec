"""weightsync as a TorchRL weight-sync scheme: `WeightsyncScheme`, registered as the backend "weightsync".

    import weightsync.torchrl
    collector = MultiSyncCollector(..., weight_sync_schemes={"policy": weightsync.torchrl.WeightsyncScheme()})

TorchRL builds the scheme on the trainer, pickles it into every worker and calls
it from both sides; this class maps those calls onto a listening `Sender` and one
`Receiver` per worker:

- trainer, `init_on_sender`: a Sender over the policy's weights, listening on an
  abstract Unix name; each worker gets only its own URL's secret in use, and the
  channel it opens exists in its process alone, so a dead worker is seen at once
  (SEND-3). Nothing outlives the workers: once every worker is gone the sender
  closes itself and its helper thread ends, because TorchRL 0.14 never calls the
  trainer side's shutdown().
- worker, `connect`: joins by URL and rebinds the policy's tensors to weights of
  its own (a policy built on the meta device gets real tensors here).
- every rollout step sees one version: in push mode the policy's forward runs
  inside `reading()` (forward hooks), so applies happen between steps; in pull
  mode the forward pre-hook polls, so a new version is applied at the next step
  and `update_policy_weights_()` does not wait for idle workers.
- the worker's policy-version tracker follows weightsync's version.
"""

from __future__ import annotations

import os
import sys
import threading
import uuid
from contextlib import ExitStack

from tensordict import TensorDict, TensorDictBase
from torch import nn
from torchrl.weight_update.weight_sync_schemes import WeightSyncScheme, register_weight_sync_backend

from . import Receiver, Sender
from . import sender as sender_module
from .errors import WeightSyncError

__all__ = ["WeightsyncScheme"]


def _weights_of(source) -> TensorDictBase:
    """Detached weights of a module or a TensorDict, keyed as TensorDict.from_module keys them."""
    if isinstance(source, nn.Module):
        return TensorDict.from_module(source).data
    if isinstance(source, TensorDictBase):
        return source.data
    if isinstance(source, dict):
        return TensorDict(source).data
    raise TypeError(f"weights must be an nn.Module, a TensorDict or a dict, not {type(source).__name__}")


@register_weight_sync_backend("weightsync")
class WeightsyncScheme(WeightSyncScheme):
    """A TorchRL weight-sync scheme backed by weightsync: versions, acks, named failures, no torn reads.

    Args:
        mode: "push" (default): workers apply each version in the background between
            forward passes, and `update_policy_weights_()` returns once every targeted
            worker holds it. "pull": a worker applies the newest version at the start of
            its next forward pass, and `update_policy_weights_()` returns after publishing.
        zero_copy: workers read the trainer's slots instead of copies of their own.
        timeout: seconds `update_policy_weights_()` may wait for a free slot and, in push
            mode, for acks; it raises weightsync's SyncTimeoutError after it.
        connect_timeout: seconds a worker waits to join and receive the first version.
    """

    def __init__(self, mode: str = "push", zero_copy: bool = False, timeout: float = 60.0,
                 connect_timeout: float = 300.0):
        if mode not in ("push", "pull"):
            raise ValueError(f"mode must be 'push' or 'pull', got {mode!r}")
        super().__init__(strategy="tensordict")
        self.mode = mode
        self.zero_copy = zero_copy
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._urls: list[str] = []
        self._sender: Sender | None = None
        self._receiver: Receiver | None = None
        self._pending: list = []  # pull mode: futures whose failures the next send reports
        # The module whose tensors are the receiver's, and the version bound.
        self._bound: tuple[nn.Module, int | None] | None = None
        self._local = threading.local()

    def create_transport(self, **kwargs):  # abstract in TorchRL; weightsync is the transport
        return None

    # ---- trainer -----------------------------------------------------------------------

    def _init_on_sender_impl(self, *, model_id: str | None = None, context=None, weights=None, model=None,
                             num_workers: int | None = None, ctx=None, **kwargs) -> None:
        self.model_id = model_id
        if context is not None:
            self.context = context
            if not num_workers and not hasattr(context, "num_workers"):
                raise ValueError(
                    f"WeightsyncScheme syncs weights into a collector's worker processes, and a "
                    f"{type(context).__name__} runs its policy in this process, where there is nothing to sync: "
                    "use it with MultiSyncCollector or MultiAsyncCollector (or give num_workers= for a "
                    "collector of your own)")
            num_workers = num_workers or context.num_workers
        if weights is None:
            source = model if model is not None else self._context_model()
            if source is None:
                raise ValueError("WeightsyncScheme needs the policy (or weights=) on the trainer to publish its weights")
            weights = _weights_of(source)
        if not num_workers:
            raise ValueError("WeightsyncScheme needs num_workers when it is not given a collector as context")
        name = f"weightsync-torchrl-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._sender = Sender(_weights_of(weights), num_workers, listen=f"unix:@{name}")
        # Nothing outlives the workers: TorchRL never calls the trainer side's shutdown().
        sender_module.close_when_all_gone(self._sender)
        self._urls = [self._sender.url(i) for i in range(num_workers)]

    def _context_model(self):
        context = self.context
        if context is None:
            return None
        policy = getattr(context, "policy", None)
        if isinstance(policy, nn.Module):
            return policy
        fallback = getattr(context, "_fallback_policy", None)
        if isinstance(fallback, nn.Module):
            return fallback
        factories = getattr(context, "policy_factory", None) or [None]
        return factories[0]() if factories[0] is not None else None

    def _setup_connection_and_weights_on_sender_impl(self, *, worker_idx=None, weights=None) -> None:
        """Workers join by URL whenever they are ready; a send waits for the targets it names."""
        if weights is not None:
            self.send(weights)

    def send(self, weights=None, worker_ids=None) -> None:
        """Publishes a version to `worker_ids` (all by default); in push mode, waits for their acks."""
        if self._sender is None:
            raise RuntimeError("WeightsyncScheme.send() is for the trainer, after init_on_sender()")
        self._report_pull_failures()
        source = weights if weights is not None else self._context_model()
        if source is None:
            raise ValueError("no weights to send: pass them, or give the collector a policy")
        td = _weights_of(source)
        workers = None if worker_ids is None else [int(w) for w in (worker_ids if isinstance(worker_ids, (list, tuple))
                                                                      else [worker_ids])]
        if self.mode == "push":
            version = self._sender.send(td, workers=workers, timeout=self.timeout)
        else:
            future = self._sender.send_async(td, workers=workers, timeout=self.timeout)
            self._pending.append(future)
            version = future.version
        tracker = getattr(self.context, "policy_version_tracker", None) if self.context is not None else None
        if tracker is not None and hasattr(tracker, "version"):
            tracker.version = version

    def _report_pull_failures(self) -> None:
        """Pull mode does not wait for acks; a worker that failed or died is reported at the next send."""
        still = []
        for f in self._pending:
            if f.done():
                f.wait(0)  # raises the failure, if any
            else:
                still.append(f)
        self._pending = still[-64:]

    @property
    def sender(self) -> Sender | None:
        """The trainer's weightsync Sender (None on a worker)."""
        return self._sender

    # ---- worker ------------------------------------------------------------------------

    def _init_on_receiver_impl(self, model_id: str, context=None, **kwargs) -> None:
        self.model_id = model_id
        if context is not None:
            self.context = context
        if kwargs.get("model") is not None:
            self.model = kwargs["model"]
        if kwargs.get("worker_idx") is not None:
            self.worker_idx = kwargs["worker_idx"]
        elif context is not None and getattr(context, "worker_idx", None) is not None:
            self.worker_idx = context.worker_idx

    def _setup_connection_and_weights_on_receiver_impl(self, *, worker_idx=None) -> None:
        idx = worker_idx if worker_idx is not None else self.worker_idx
        if idx is None or not 0 <= idx < len(self._urls):
            raise RuntimeError(f"WeightsyncScheme: no URL for worker {idx!r} ({len(self._urls)} workers)")
        self._receiver = Receiver(self._urls[idx], mode=self.mode, zero_copy=self.zero_copy)
        self._receiver.connect(timeout=self.connect_timeout)
        model = self.model
        self._bind(model)
        model.register_forward_pre_hook(self._before_forward)
        model.register_forward_hook(self._after_forward, always_call=True)

    def _bind(self, module: nn.Module) -> None:
        """Makes the module's tensors the receiver's (rebinding, so a meta-device policy gets real ones)."""
        rx = self._receiver
        assert rx is not None, "a worker binds its module once its receiver connected"
        flat = TensorDict(dict(rx.weights)).unflatten_keys(".")
        self._strategy.apply_weights(module, flat, inplace=False)
        self._bound = (module, rx.version)
        context = self.context
        if context is not None and hasattr(context, "_set_received_policy_version"):
            context._set_received_policy_version(rx.version)

    def _before_forward(self, module, args):
        """Every forward pass sees one version (CONS-1): inside reading() (push), or after poll() (pull)."""
        rx = self._receiver
        if rx is None or rx.closed:
            return None
        if self.mode == "pull":
            rx.poll(0)
        else:
            stack = ExitStack()
            stack.enter_context(rx.reading())
            self._local.stack = stack
        version = rx.version
        if version is None or self._bound == (module, version):
            return None
        if self._bound[0] is not module or self.zero_copy:  # a new module, or views of another slot
            self._bind(module)
        else:  # copy mode: the bound tensors were written in place
            self._bound = (module, version)
            context = self.context
            if context is not None and hasattr(context, "_set_received_policy_version"):
                context._set_received_policy_version(version)
        return None

    def _after_forward(self, module, args, output):
        stack = getattr(self._local, "stack", None)
        if stack is not None:
            self._local.stack = None
            stack.close()
        return None

    @property
    def receiver(self) -> Receiver | None:
        """The worker's weightsync Receiver (None on the trainer)."""
        return self._receiver

    # ---- both --------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Closes this side's sender or receiver; idempotent, safe from `__del__` and at exit."""
        sender, self._sender = getattr(self, "_sender", None), None
        receiver, self._receiver = getattr(self, "_receiver", None), None
        try:
            if sender is not None:
                if sys.is_finalizing():
                    sender_module.release(sender)  # no thread joins while the interpreter shuts down
                else:
                    sender.close()
            if receiver is not None:
                receiver.close()
        except WeightSyncError:
            pass

    def __getstate__(self):
        state = super().__getstate__()
        for key in ("_sender", "_receiver", "_pending", "_bound", "_local"):
            state.pop(key, None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._sender = None
        self._receiver = None
        self._pending = []
        self._bound = None
        self._local = threading.local()

