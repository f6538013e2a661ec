"""The network profile's data plane (spec/15-network.md): torch.distributed gloo, one group per receiver.

Each receiver incarnation gets a two-rank gloo process group (sender rank 0,
receiver rank 1) over a TCPStore of its own (NET-6) and a fresh key prefix (NET-2).
Neither side's caller ever waits on gloo (NET-3): the sender's `Lane` is a
thread that sends each version's slot in order, and the receiver's `Inbound`
is a thread that receives them into buffers of its own. A transfer that fails
or outlives its timeout is reported once, and the group is dropped.

Every thread here holds torch.distributed objects (a group, a store and their C++
threads) and drops them itself, so each is joined, bounded, before the interpreter
finalizes: by the sender's close() (`end`), the receiver's close(), or at exit
(`_end_threads`). A daemon thread that takes the GIL back while the interpreter
finalizes (as a group's destructor does) calls pthread_exit, whose unwinding through
torch's C++ frames aborts the process ("terminate called without an active exception").
"""

from __future__ import annotations

import atexit
import datetime
import logging
import queue
import secrets
import threading
import weakref
from collections.abc import Callable, Iterable

import torch
import torch.distributed as dist

from . import limits
from .clock import Clock, Deadline, monotonic
from .messages import DataPlane

log = logging.getLogger("weightsync")

BACKEND = "gloo"
#: The key a receiver sets under its prefix before it builds its side (NET-2, NET-5).
JOINED = "joined"
#: How often the sender looks for that key.
JOIN_POLL = 0.02
#: The key gloo's rendezvous sets for rank 1 (the receiver) under the group's prefix, for the first device,
#: once the receiver has begun to build its side. The sender builds its own only after it, so that a
#: receiver that set JOINED and left never holds the sender inside gloo's constructor, which cannot be
#: interrupted and aborts the process if its store goes away meanwhile. A private name of torch's, so a
#: test (tests/test_network.py) builds a real group and checks that this torch still writes it.
RANK_KEY = "0/1"
#: How long the sender's close() waits for its lanes (`end`): half for the transfers queued, half once aborted.
END_WAIT = limits.CLOSE_WAIT
#: How long the receiver's close() waits for its Inbound thread once its group is aborted.
INBOUND_WAIT = limits.HEARTBEAT
#: How long interpreter exit waits for the threads still running here, all together, once each is aborted.
EXIT_WAIT = limits.CLOSE_WAIT


def _ms(seconds: float) -> int:
    """Seconds as the wire's milliseconds: at least 1, so that no bound reads as none."""
    return max(1, round(seconds * 1000))


def _client(host: str, port: int, timeout: float) -> dist.TCPStore:
    """A client of the store at host:port, made within `timeout` or TimeoutError (INIT-5, API-7).

    torch's client waits for the store's first answer without bound (a store port that accepts and never answers:
    a trainer stopped right after its Init), and retries a refused port past its timeout; it is made in a thread of
    its own, waited for `timeout`. A client still being made then is left to that daemon thread, which ends with
    the process, or sooner if the store answers or closes."""
    seconds = max(timeout, 0.001)
    made: queue.SimpleQueue[dist.TCPStore | BaseException] = queue.SimpleQueue()

    def make() -> None:
        try:
            made.put(dist.TCPStore(host, port, is_master=False, wait_for_workers=False,
                                   timeout=datetime.timedelta(seconds=seconds)))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            made.put(e)

    threading.Thread(target=make, name="weightsync-store-client", daemon=True).start()
    try:
        got = made.get(timeout=seconds)
    except queue.Empty:
        raise TimeoutError(f"the data plane's store at {host}:{port} did not answer within {seconds:g} s") from None
    if isinstance(got, BaseException):
        raise got
    return got


def _group(store: dist.Store, prefix: str, rank: int, hostname: str, timeout: float) -> dist.ProcessGroupGloo:
    opts = dist.ProcessGroupGloo._Options()  # type: ignore[attr-defined]  # private, not in torch's stub
    opts._devices = [dist.ProcessGroupGloo.create_device(hostname=hostname)]
    opts._timeout = datetime.timedelta(seconds=timeout)
    opts._threads = 1
    return dist.ProcessGroupGloo(dist.PrefixStore(prefix, store), rank, 2, opts)


class Store:
    """The TCPStore where one receiver incarnation and the sender find each other (NET-6: one per
    incarnation, ended by its lane once the first transfer is through or the lane ends)."""

    def __init__(self, host: str, transfer_timeout: float = limits.TRANSFER_TIMEOUT, lease: float = limits.LEASE):
        self.host = host
        self.transfer_timeout, self.lease = transfer_timeout, lease
        store = dist.TCPStore(host, 0, is_master=True, wait_for_workers=False,
                              timeout=datetime.timedelta(seconds=transfer_timeout))
        self.store: dist.TCPStore | None = store
        self.port = store.port

    def close(self) -> None:
        self.store = None  # the TCPStore's server ends with its last reference, and frees what was written

    def data_plane(self, advertised_host: str, nbytes: int) -> DataPlane:
        """Init's `data_plane` for the incarnation this store serves: a fresh prefix (NET-1)."""
        return DataPlane(BACKEND, f"{advertised_host}:{self.port}", secrets.token_hex(16), nbytes,
                         _ms(self.transfer_timeout), _ms(self.lease))


def make_store(host: str, transfer_timeout: float, lease: float, done: Callable[[Store | Exception], None]) -> None:
    """Makes a Store on a thread of its own, then hands it, or what it raised, to `done` (from that thread).

    torch's TCPStore looks its address up by reverse DNS while it starts, which can take seconds
    (5 s, in one start of 30 on a machine whose resolver drops queries): the thread that keeps the
    sender's leases and heartbeats must not wait on it, or every other receiver falls silent (NET-4)."""
    def run() -> None:
        try:
            made: Store | Exception = Store(host, transfer_timeout, lease)
        except Exception as e:  # noqa: BLE001 - handed over: the receiver it was for is cut off
            made = e
        done(made)

    threading.Thread(target=run, name="weightsync-store", daemon=True).start()


class Lane:
    """The sender's side of one receiver's group: sends each submitted slot, in order, from its own thread.

    The lane owns its receiver's store (NET-6) and ends it from its own thread, once the
    first transfer is through or the lane ends: only then is the receiver surely past the
    group's construction, which must not lose its store. The thread waits for the
    receiver's `joined` key looking without a blocking store call, so that a receiver that
    never comes holds up no other lane and no abort waits on it (NET-5); only then does it
    build the group.
    `failed(why)` is called once, from the lane's thread, when the receiver does not
    join in time, the group cannot be built or a transfer fails; the lane then ends
    and drops the group.
    """

    def __init__(self, store: Store, plane: DataPlane, hostname: str, failed: Callable[[str], None],
                 clock: Clock = monotonic):
        self._clock = clock  # NET-5's join wait
        self._queue: queue.SimpleQueue[tuple[int, torch.Tensor] | None] = queue.SimpleQueue()
        self._store = store
        self._args = (plane.prefix, hostname, plane.timeout)
        self._failed = failed
        self._stop = threading.Event()  # set by close(): stop looking for a receiver that has not joined
        # Set by close(abort=True) before it looks at _group, read by the thread after it sets _group:
        # a group built while such a close runs is aborted by one side or both (abort is idempotent).
        self._aborted = False
        self._group: dist.ProcessGroupGloo | None = None
        self.thread = threading.Thread(target=self._run, name="weightsync-lane", daemon=True)
        _track(self.thread, weakref.WeakMethod(self._abort_now))
        self.thread.start()

    def submit(self, version: int, buffer: torch.Tensor) -> None:
        self._queue.put((version, buffer))

    def close(self, abort: bool = False) -> None:
        """Ends the lane once its queue is sent; with `abort` (the receiver is gone), once the transfer in flight
        ends, reporting nothing. That transfer fails as soon as the receiver's process is gone (its connection
        closes); gloo's abort() does not interrupt it (torch 2.13), so to a receiver that is alive but silent it
        lasts up to the transfer timeout. Does not wait: `end` does."""
        self._aborted = self._aborted or abort
        self._queue.put(None)
        self._stop.set()  # a receiver that has not joined yet gets nothing more
        if abort:
            _abort(self._group)

    def _abort_now(self) -> None:
        self.close(abort=True)

    def _fail(self, why: str) -> None:
        if not self._aborted:  # the sender cut this receiver off already; an aborted transfer is no news
            self._failed(why)

    def _connect(self, timeout: float) -> dist.Store:
        """A store connection of the lane's own: a call waiting on it holds up no other lane (NET-5)."""
        return _client(self._store.host, self._store.port, timeout)

    def _joined(self, keys: dist.Store, timeout: float) -> bool:
        """Whether the receiver set its `joined` key, then began its side of the group; False once the lane is
        closed. Never blocks on the store. Its keys are counted only until `joined` (NET-6): the construction
        that follows writes gloo's own keys beside the receiver's. Each count is taken before the look for
        `joined`, so a count made while `joined` was still absent holds no key written after it."""
        deadline = Deadline(timeout, self._clock)
        for key, what in ((JOINED, "join the data plane"), (RANK_KEY, "build its side of the data plane")):
            while True:
                n = keys.num_keys() if key == JOINED else 0
                if keys.check([key]):
                    break
                if n > limits.MAX_STORE_KEYS:
                    raise ValueError(f"the receiver wrote {n} keys into its data-plane store, more than "
                                     f"{limits.MAX_STORE_KEYS} (NET-6)")
                if self._stop.wait(JOIN_POLL):
                    return False  # closed before the receiver built its side: nothing was started to wait out
                if deadline.expired():
                    raise TimeoutError(f"the receiver did not {what} within {timeout:.0f} s (NET-5)")
        return True

    def _run(self) -> None:
        try:
            self._serve()
        finally:
            self._store.close()  # from this thread only: never under a group being built (NET-6)

    def _serve(self) -> None:
        prefix, hostname, timeout = self._args
        try:
            store = self._connect(timeout)
            if not self._joined(dist.PrefixStore(prefix, store), timeout):
                return
            group = _group(store, prefix, 0, hostname, timeout)
        except Exception as e:  # noqa: BLE001 - reported to the sender, which names the receiver (NET-3)
            self._fail(f"the data plane could not be built: {type(e).__name__}: {e}")
            return
        self._group = group
        if self._aborted:
            _abort(group)
            self._group = None
            return
        try:
            while (item := self._queue.get()) is not None:
                version, buffer = item
                try:
                    group.send([buffer], 1, 0).wait()  # type: ignore[attr-defined]  # not in torch's stub
                except Exception as e:  # noqa: BLE001
                    self._fail(f"the transfer of version {version} failed: {type(e).__name__}: {e}")
                    return
                self._store.close()  # the receiver has posted its receive: past its group's construction
        finally:
            self._group = None
            del group


class Inbound:
    """The receiver's side: receives each announced version, in order, into buffers of its own.

    `arrived(version, buffer_id)` is called from its thread once a transfer is complete;
    `failed(why)` once when one fails. Buffers are chosen by `pick()` among those no one
    reads; at most `limit` exist.
    """

    def __init__(self, plane: DataPlane, hostname: str, timeout: float, limit: int = 4):
        host, port = plane.store_address
        store = _client(host.strip("[]"), int(port), timeout)
        dist.PrefixStore(plane.prefix, store).set(JOINED, "1")  # the sender builds its side now (NET-2)
        self.nbytes = plane.nbytes
        self.timeout = plane.timeout
        self.group: dist.ProcessGroupGloo | None = _group(store, plane.prefix, 1, hostname,
                                                           min(self.timeout, max(timeout, 0.001)))
        self.buffers: list[torch.Tensor] = []
        self.limit = limit
        self._queue: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    def receive_now(self, busy: set[int]) -> int:
        """Receives one transfer in the calling thread (the Init's version); returns its buffer id."""
        b = self.pick(busy)
        self._recv(b)
        return b

    def _recv(self, b: int) -> None:
        group = self.group
        if group is None:
            raise RuntimeError("the data plane is closed")
        group.recv([self.buffers[b]], 0, 0).wait()  # type: ignore[attr-defined]  # not in torch's stub

    def pick(self, busy: set[int]) -> int:
        for b in range(len(self.buffers)):
            if b not in busy:
                return b
        if len(self.buffers) >= self.limit:
            raise RuntimeError(f"all {self.limit} receive buffers are in use")
        self.buffers.append(torch.empty(self.nbytes, dtype=torch.uint8))
        return len(self.buffers) - 1

    def start(self, busy: Callable[[], set[int]], arrived: Callable[[int, int], None],
              failed: Callable[[str], None]) -> None:
        def run() -> None:
            while (version := self._queue.get()) is not None:
                try:
                    b = self.pick(busy())
                    self._recv(b)
                except Exception as e:  # noqa: BLE001 - the receiver stops; the sender sees it gone (NET-3)
                    if self.group is not None:  # not aborted by close()
                        failed(f"the transfer of version {version} failed: {type(e).__name__}: {e}")
                    return
                arrived(version, b)

        self.thread = threading.Thread(target=run, name="weightsync-inbound", daemon=True)
        _track(self.thread, weakref.WeakMethod(self._end))
        self.thread.start()

    def expect(self, version: int) -> None:
        self._queue.put(version)

    def close(self, bound: Deadline | None = None) -> None:
        """Ends the thread; a transfer in flight is aborted, so no gloo call outlives the receiver. The group is
        dropped here, once the thread let go of it (bounded by INBOUND_WAIT and `bound`, the caller's own; interpreter
        exit waits for a thread still running)."""
        group = self._end()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(INBOUND_WAIT if bound is None else bound.cap(INBOUND_WAIT))
        del group

    def _end(self) -> dist.ProcessGroupGloo | None:
        """Tells the thread to end and aborts the transfer in flight; returns the group, for the caller to drop."""
        self._queue.put(None)
        group, self.group = self.group, None
        _abort(group)
        return group


def end(lanes: Iterable[Lane], bound: float = END_WAIT) -> list[Lane]:
    """Closes `lanes` and waits for their threads, which drop their groups and stores: first for the transfers
    queued (half of `bound`), then, aborted, for the rest. Returns the lanes whose thread still runs (logged)."""
    lanes = [lane for lane in lanes if lane.thread is not threading.current_thread()]
    first, whole = Deadline(bound / 2), Deadline(bound)
    for lane in lanes:
        lane.close()
    for lane in lanes:
        lane.thread.join(first.left())
    late = [lane for lane in lanes if lane.thread.is_alive()]
    for lane in late:
        lane.close(abort=True)
    for lane in late:
        lane.thread.join(whole.left())
    stuck = [lane for lane in late if lane.thread.is_alive()]
    if stuck:
        log.warning("%d data-plane lane(s) did not end within %.0f s: a transfer to a receiver that is silent, or a "
                    "group being built, ends at the transfer timeout", len(stuck), bound)
    return stuck


#: The threads started here, each with what ends it at once (weakly: a thread that ended keeps nothing alive):
#: interpreter exit waits for those still running.
_THREADS: dict[threading.Thread, weakref.WeakMethod] = {}


def _track(thread: threading.Thread, stop: weakref.WeakMethod) -> None:
    for done in [t for t in _THREADS if t.ident is not None and not t.is_alive()]:
        _THREADS.pop(done, None)
    _THREADS[thread] = stop


@atexit.register
def _end_threads() -> None:
    """At interpreter exit, before daemon threads are frozen (and after hub._end_helpers, registered later, has
    released every listening sender): each thread still running here is aborted and joined, bounded, so that none
    drops a group or a store while the interpreter finalizes."""
    running = [(t, stop) for t, stop in list(_THREADS.items()) if t.is_alive() and t is not threading.current_thread()]
    _THREADS.clear()
    deadline = Deadline(EXIT_WAIT)
    for _, ref in running:
        try:
            if (stop := ref()) is not None:
                stop()
        except Exception as e:  # noqa: BLE001 - exit goes on; the join below is still bounded
            log.debug("ending a data-plane thread at exit: %s", e)
    for thread, _ in running:
        thread.join(deadline.left())
    if any(t.is_alive() for t, _ in running):
        log.warning("a data-plane thread did not end within %.0f s of interpreter exit", EXIT_WAIT)


def _abort(group: dist.ProcessGroupGloo | None) -> None:
    """Aborts a group (None is left alone). In torch 2.13 gloo's abort() returns at once without interrupting a
    pending send or receive, which ends when its peer's connection closes or at the group's timeout."""
    if group is not None:
        try:
            group.abort()
        except Exception as e:  # noqa: BLE001 - a group that already failed has nothing left to abort
            log.debug("aborting a gloo group: %s", e)
