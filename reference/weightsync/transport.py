"""Channels: a Session's bytes over a non-blocking stream socket, buffer handles beside them, every wait bounded.

A channel is one end of a connected stream socket (a Unix socket pair for a
handle, a Unix or TCP connection for a URL) and the sans-I/O session.Session
that gives its bytes meaning. It never blocks: bytes are read as they come and
handed to the session, which cuts them into frames (WIRE-1); writes that the
socket cannot take are queued and flushed later, so a peer that sends half a frame or stops reading
can hold up nobody but itself (SEC-2, SEC-3). When the peer process exits the
kernel closes its end and a read returns end of file: that is how a dead peer
is seen without a timeout (CON-1, SEND-3).

Handles (file descriptors) travel with SCM_RIGHTS attached to the bytes of the
frame that lists them, in list order (WIRE-4). Only a receiver's channel takes
them; the sender reads with plain recv, so the kernel drops anything a
receiver tries to pass it.
"""

from __future__ import annotations

import array
import os
import select
import socket
import threading
from collections import deque

from . import clock
from .clock import Deadline, millis
from .errors import LocalProtocolError, RemoteProtocolError
from .polling import HUP_EVENTS, IN_EVENTS, Spin
from .session import Ended, Session
from .timers import FrameTimer

_READ = 256 * 1024  # bytes read from one peer per pass, so one peer cannot starve the others
_FDS_PER_PIECE = 250  # under the kernel's limit of 253 descriptors per message
_ANC = socket.CMSG_SPACE(_FDS_PER_PIECE * array.array("i").itemsize)


class ChannelClosed(Exception):
    """The peer's end is gone (end of file, reset, broken pipe)."""


class Channel:
    """One end of a framed connection: the socket's I/O around a Session, which holds every rule.

    `allowed` is what may arrive now (MSG-3; a rendezvous changes it once the join is done);
    `max_in` the frame bound (WIRE-2); `now` the clock the session is given.
    """

    def __init__(self, sock: socket.socket, *, allowed: tuple, max_in: int, takes_handles: bool = False,
                 now: clock.Clock = clock.monotonic):
        sock.setblocking(False)
        self.now = now
        self.sock = sock
        self._fd = sock.fileno()
        self.session = Session(allowed, max_in, takes_handles=takes_handles)
        self._takes_handles = takes_handles
        self._out: deque[tuple[memoryview, list[int]]] = deque()
        #: Whether bytes wait to be written: kept with `_out` (asked several times a send, by the hub's polls).
        self.wants_write = False
        self.out_bytes = 0
        self.hup = False  # the last poll saw the peer hang up: read on to the end of file
        self.closed = False
        self._waits: tuple[int | None, select.poll] | None = None  # wait_event's poll, kept per wake descriptor
        self._spin = Spin()  # and the spin before it sleeps

    def fileno(self) -> int:
        return self._fd

    @property
    def allowed(self) -> tuple:
        return self.session.allowed

    @allowed.setter
    def allowed(self, kinds: tuple) -> None:
        self.session.allowed = kinds

    @property
    def eof(self) -> bool:
        return self.session.eof

    @property
    def frame(self) -> FrameTimer:
        return self.session.frame

    # ---- writing ----

    def send(self, msg: object, fds: tuple[int, ...] = (), slot: int | None = None, slots=None) -> None:
        """Queues one frame (and its handles) and writes what the socket takes now; never blocks.
        The session steps its machine first (Session.send): an illegal message raises before any byte."""
        # The machine steps first; a closed channel then raises, as a socket that refuses the frame does, and the
        # caller takes the receiver for gone (SEND-3). The clock is read only where a lease counts what we send (NET-4).
        session = self.session
        frame = session.send(msg, self.now() if session.liveness is not None else 0.0, slot, slots)
        if self.closed:
            raise ChannelClosed("channel closed")
        if not fds and not self._out:  # the common case: one small frame, taken whole by the socket
            data = frame
            try:
                n = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                n = 0
            except OSError as e:
                raise ChannelClosed(str(e)) from e
            if n < len(data):
                self._out.append((memoryview(data)[n:], []))
                self.out_bytes += len(data) - n
                self.wants_write = True
            return
        data = memoryview(frame)
        handles = list(fds)
        if len(handles) <= _FDS_PER_PIECE:
            self._out.append((data, handles))
        else:  # each piece carries its share of handles on at least one byte of the frame
            chunks = [handles[k : k + _FDS_PER_PIECE] for k in range(0, len(handles), _FDS_PER_PIECE)]
            for k, chunk in enumerate(chunks):
                end = k + 1 if k < len(chunks) - 1 else len(data)
                self._out.append((data[k:end], chunk))
        self.out_bytes += len(data)
        self.wants_write = True
        self.flush()

    def flush(self) -> bool:
        """Writes queued bytes until the socket is full; True once nothing is left."""
        while self._out:
            data, fds = self._out[0]
            try:
                if fds:
                    n = self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
                else:
                    n = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError as e:
                raise ChannelClosed(str(e)) from e
            self.out_bytes -= n
            if n < len(data):
                self._out[0] = (data[n:], [])  # the handles went with the first byte
                return False
            self._out.popleft()
        self.wants_write = False
        return True

    # ---- reading ----

    def fill(self) -> None:
        """Reads what has arrived (up to _READ bytes a call), without blocking; sets `eof` at end of file.

        It reads until the socket is empty, so an end of file right behind the last
        bytes, and a frame queued behind one that carried handles, are seen in the same call.
        Bytes land in a buffer kept per thread (`recv(_READ)` would allocate, map and unmap
        256 KiB at every call: about 20 µs, most of a small send's read) and the session copies them.
        """
        got = 0
        session = self.session
        view = _read_buffer()
        while not (self.closed or session.eof) and got < _READ:
            fds: list[int] = []
            truncated = False
            try:
                if self._takes_handles:
                    n, anc, flags, _ = self.sock.recvmsg_into((view,), _ANC, _CLOEXEC)
                    fds = _handles(anc) if anc else []
                    truncated = bool(flags & _CTRUNC)
                else:
                    n = self.sock.recv_into(view)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                n = 0  # reset by the peer: end of channel
            if not n:
                self._close_fds(fds)
                session.receive_eof()
                break
            got += n
            session.receive_data(view[:n], fds, self.now())
            if truncated:
                session.handles_truncated()
            if n < _READ and not self.hup and not fds:
                break  # a short read emptied the socket; `hup` (from the poll) says an end of file waits
            # recvmsg stops right after bytes that carried handles, with more maybe behind: read on. Were
            # anything left behind a short read, the channel would stay readable and the next poll say so.

    @property
    def partial_since(self) -> float | None:
        """When the frame in progress began to arrive; None when no frame is in progress."""
        return self.session.frame.since

    def next(self) -> tuple[object, list[int]] | None:
        """The next whole message with its handles, or None; a bad frame raises RemoteProtocolError."""
        try:
            return self.session.next_message(self.now())
        except RemoteProtocolError:
            self._close_fds(self.session.take_fds() if self.session.orphans else [])
            raise

    def next_event(self):
        """The session's next event (session.Session.next_event); handles of a refused frame are closed."""
        if self.session.quiet:  # no clock to read: the answer after most messages
            return None
        try:
            return self.session.next_event(self.now())
        except RemoteProtocolError:
            self._close_fds(self.session.take_fds() if self.session.orphans else [])
            raise

    def overdue(self) -> bool:
        """Whether a frame was started and not finished within the frame bound (WIRE-7)."""
        frame = self.session.frame
        return frame.since is not None and frame.overdue(self.now())

    def frame_timer(self) -> float | None:
        """Seconds until the frame in progress becomes overdue, or None."""
        frame = self.session.frame
        return None if frame.since is None else frame.left(self.now())

    def wait_event(self, deadline: Deadline, wake_fd: int | None = None):
        """The session's next event, reading until `deadline` for one; None once it passed, or when a byte on
        `wake_fd` ended the wait. The one loop over a single channel (the handshake, both pending sources, a
        joiner): the session judges every frame and end, and its timers (a frame in progress, WIRE-7; the lease
        and heartbeats, NET-4) cut each wait short, so a stalled or silent peer cannot hold the caller.
        """
        if self._waits is None or self._waits[0] != wake_fd:  # one thread waits on a channel at a time
            poller = select.poll()
            poller.register(self._fd, IN_EVENTS)
            if wake_fd is not None:
                poller.register(wake_fd, IN_EVENTS)
            self._waits = (wake_fd, poller)
        poller = self._waits[1]
        while True:
            if self.closed:  # here, by another thread (close(), a violation): its descriptor polls ready forever
                return Ended("the channel was closed on this side")
            event = self.next_event()
            if event is not None:
                return event
            timer = self.session.timer(self.now())
            ours = woken = False
            for fd, ev in self._spin.poll(poller, millis(deadline.left() if timer is None else deadline.cap(timer))):
                if fd == self._fd:
                    ours, self.hup = True, bool(ev & HUP_EVENTS)
                else:
                    woken = True
            if ours:
                self.fill()
            if woken:
                return None  # woken: the caller looks at why
            if deadline.expired():
                return self.next_event()  # a bound that fell due with the deadline is still judged

    def send_bounded(self, msg: object, deadline: Deadline | float) -> bool:
        """Sends and waits until the socket took every byte or `deadline` (or that many seconds) passed; True when
        written. A frame the socket takes at once, the common case, starts no clock."""
        self.send(msg)
        if not self.wants_write:
            return True
        bound = deadline if isinstance(deadline, Deadline) else Deadline(deadline, self.now)
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        while self.wants_write:
            if bound.expired():
                return False
            poller.poll(millis(bound.left()))
            self.flush()
        return True

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._close_fds(self.session.take_fds())
        self._out.clear()
        self.wants_write = False
        self.sock.close()

    @staticmethod
    def _close_fds(fds) -> None:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass


def hung_up(sock: socket.socket) -> bool:
    """Whether the peer ended the connection, without waiting and without reading what it sent before."""
    poller = select.poll()
    poller.register(sock, HUP_EVENTS)
    return any(ev & HUP_EVENTS for _, ev in poller.poll(0))


def _handles(anc) -> list[int]:
    """The descriptors an SCM_RIGHTS message carried, in order (WIRE-4)."""
    out: list[int] = []
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = array.array("i")
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
            out.extend(fds)
    return out


_CLOEXEC = getattr(socket, "MSG_CMSG_CLOEXEC", 0)
_CTRUNC = int(socket.MSG_CTRUNC)  # a plain int: the enum's `&` costs microseconds on every read
_BUFFERS = threading.local()


def _read_buffer() -> memoryview:
    """This thread's read buffer (a channel is read by one thread at a time; the session copies what it is given)."""
    view = getattr(_BUFFERS, "view", None)
    if view is None:
        view = _BUFFERS.view = memoryview(bytearray(_READ))
    return view


class Handle:
    """What a receiver process needs to reach the sender: pass it as a Process argument.

    It holds the receiver's end of a Unix socket pair (`conn`), travels only to a
    process started with spawn or forkserver (CON-2), to one process only (CON-3),
    and only until the sender's connect() consumes it (LIFE-2).
    """

    def __init__(self, receiver: int, conn: socket.socket):
        self.receiver = receiver
        self.conn = conn
        self.given = False  # pickled: its channel end went to another process, which alone may use it (CON-3)
        self.pid = os.getpid()  # made, or unpickled, here: a forked child sees its parent's pid (CON-2)

    @property
    def closed(self) -> bool:
        return self.conn.fileno() < 0

    def fileno(self) -> int:
        """The receiver's end of the channel: a connected stream socket that speaks the wire profile."""
        return self.conn.fileno()

    def __reduce__(self):
        if self.closed:
            raise LocalProtocolError(
                f"handle({self.receiver}) was consumed by connect(); call sender.handle({self.receiver}) "
                "for a new one (LIFE-2)"
            )
        if self.given:
            raise LocalProtocolError(self.given_away())
        self.given = True
        return (Handle, (self.receiver, self.conn))

    def inherited(self) -> str | None:
        """Why this process may not use the handle, when it came by fork rather than pickling (CON-2)."""
        if self.pid == os.getpid():
            return None
        return (f"handle({self.receiver}) reached this process by fork, which hands a child every channel of its "
                "parent, so the sender could no longer see a worker die; start workers with the spawn or "
                "forkserver start method, e.g. torch.multiprocessing.get_context('spawn').Process (CON-2)")

    def given_away(self) -> str:
        return (f"handle({self.receiver}) already went to a process, and a handle reaches one process; for a new "
                f"process call sender.handle({self.receiver}) for a new handle, which cuts the old one off (CON-3)")

    def __repr__(self) -> str:
        return f"Handle(receiver={self.receiver})"


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """Two connected stream sockets: the sender's end and the end that goes into a handle."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return ours, theirs


class WakePipe:
    """A pipe whose read end `r` a thread polls beside its channel, so that another thread can wake it.

    close() closes each end once, even after an earlier close() that an interrupt cut short
    (LIFE-9): an end is forgotten before it is closed, so it is never closed twice (a number
    the system may already have given to another file), at worst leaked.
    """

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        self._open = [self.r, self.w]

    def wake(self) -> None:
        if self.w in self._open:
            os.write(self.w, b"x")

    def close(self) -> None:
        while self._open:
            os.close(self._open.pop())
