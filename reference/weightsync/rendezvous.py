"""Rendezvous by URL (spec/14-rendezvous.md): a sender that listens, receivers that join with a secret.

A process the trainer did not start joins as receiver i with `sender.url(i)`:
the listening address, the id, and receiver i's secret. Both sides prove that
they know the secret without sending it (HMAC-SHA256 over fresh challenges,
compared in constant time), so a process without it learns nothing but a
refusal, and a receiver never takes weights from an impostor (RDV-3, RDV-7).
Each receiver's secret is derived from one master secret of the sender, so
url(i) lets a process be receiver i and no other (RDV-2).

The Listener has no thread of its own: the sender services it, from the call
that is polling its channels and, while no call runs, from the sender's helper
thread (hub._serve_joins), so joins are answered at any time until close() (RDV-6).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
import socket
import stat
import time
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qs, unquote

from . import limits, transport, wire
from .clock import Clock, Deadline, monotonic
from .errors import RefusedError, RemoteProtocolError, SyncTimeoutError
from .join import JoinMachine
from .messages import PROTOCOL_VERSION, Hello, Join, Refuse, Welcome
from .session import Ended, Message
from .transport import Channel

_ACCEPTS_PER_PASS = 16
REFUSED = "refused: unknown receiver id or wrong secret"


@dataclass(frozen=True)
class Address:
    """A parsed listening address: "unix:PATH", "unix:@NAME" or "tcp://HOST:PORT" (RDV-1)."""

    kind: str  # "unix", "abstract" or "tcp"
    family: int
    sockaddr: str | tuple[str, int]  # a path, "\0" and a name, or (host, port)
    text: str

    @property
    def carries_handles(self) -> bool:
        return self.family == socket.AF_UNIX

    @property
    def path(self) -> str | None:
        """The socket's file for "unix:PATH"; None for the others, which have none."""
        return self.sockaddr if self.kind == "unix" and isinstance(self.sockaddr, str) else None


#: RDV-1's grammar, piece by piece: ids and ports in canonical decimal, secrets in hex, host names.
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_SECRET = re.compile(f"[0-9a-fA-F]{{{2 * limits.SECRET_BYTES}}}")
_HOSTNAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")
#: The longest socket path or abstract name, in bytes (sun_path holds 108, one of them the final NUL).
MAX_SOCKET_NAME = 107
MAX_PORT = 65535


def _socket_name(text: str, what: str) -> str:
    name = unquote(text, errors="strict")
    if not name:
        raise ValueError(f"a Unix address needs a {what}: 'unix:{'@' if what == 'name' else ''}{what.upper()}' (RDV-1)")
    if "\0" in name:
        raise ValueError(f"a Unix socket {what} cannot hold a NUL byte (RDV-1)")
    size = len(name.encode("utf-8", "surrogateescape"))
    if size > MAX_SOCKET_NAME:
        raise ValueError(f"a Unix socket {what} holds at most {MAX_SOCKET_NAME} bytes, got {size} (RDV-1)")
    return name


def _host(host: str, text: str) -> tuple[int, str]:
    """The socket family and host of a TCP address: an IPv4 address, a host name, or an IPv6 address in []."""
    if host.startswith("[") and host.endswith("]"):
        try:
            socket.inet_pton(socket.AF_INET6, host[1:-1])
        except OSError:
            raise ValueError(f"{text!r}: {host} is not an IPv6 address (RDV-1)") from None
        return socket.AF_INET6, host[1:-1]
    if len(host) <= 253 and _HOSTNAME.fullmatch(host):
        return socket.AF_INET, host
    raise ValueError(f"{text!r}: the host must be a name, an IPv4 address or an IPv6 address in [] (RDV-1)")


def parse_address(text: str, *, listening: bool = True) -> Address:
    """An address as RDV-1 writes it, or ValueError saying what is wrong; port 0 only where one listens."""
    if not isinstance(text, str):
        raise ValueError(f"an address is a string such as 'unix:/path', 'unix:@name' or 'tcp://host:port', not {text!r}")
    if text.startswith("unix:@"):
        name = _socket_name(text[len("unix:@"):], "name")
        return Address("abstract", socket.AF_UNIX, "\0" + name, "unix:@" + _escape(name))
    if text.startswith("unix:"):
        path = _socket_name(text[len("unix:"):], "path")
        return Address("unix", socket.AF_UNIX, path, "unix:" + _escape(path))
    if text.startswith("tcp://"):
        host, sep, port = text[len("tcp://"):].rpartition(":")
        if not sep or not host or not _DECIMAL.fullmatch(port):
            raise ValueError(f"a TCP address is 'tcp://HOST:PORT' with a decimal port, got {text!r} (RDV-1)")
        if int(port) > MAX_PORT or (int(port) == 0 and not listening):
            raise ValueError(f"{text!r}: the port must be in [{0 if listening else 1}, {MAX_PORT}] (RDV-1)")
        family, name = _host(host, text)
        return Address("tcp", family, (name, int(port)), text)
    raise ValueError(f"unknown address {text!r}: use 'unix:PATH', 'unix:@NAME' or 'tcp://HOST:PORT' (RDV-1)")


def _escape(text: str) -> str:
    """% and ? written so that a URL's query starts at its first ? (RDV-1)."""
    return text.replace("%", "%25").replace("?", "%3F")


def parse_url(url: str) -> tuple[Address, int, bytes]:
    """(address, receiver id, secret) from a URL that `sender.url(i)` made, or ValueError with the reason (RDV-1)."""
    if not isinstance(url, str):
        raise ValueError(f"a receiver URL is a string, not {type(url).__name__}")
    head, sep, query = url.partition("?")
    try:
        fields = parse_qs(query, keep_blank_values=True, strict_parsing=True, errors="strict") if sep else {}
    except (ValueError, UnicodeDecodeError):
        raise ValueError(f"{url[:200]!r}: the query is not NAME=VALUE pairs joined by & (RDV-1)") from None
    for name in ("receiver", "secret"):
        if len(fields.get(name, ())) != 1:
            raise ValueError(f"{url[:200]!r} is not a receiver URL: expected ADDRESS?receiver=ID&secret=HEX, "
                             f"with {name} exactly once (RDV-1)")
    (rid,), (secret,) = fields["receiver"], fields["secret"]
    if not _DECIMAL.fullmatch(rid) or int(rid) > limits.INT_MAX:
        raise ValueError(f"{url[:200]!r}: the receiver id must be a decimal integer in [0, 2**63) without "
                         "leading zeros (RDV-1)")
    if not _SECRET.fullmatch(secret):
        raise ValueError(f"{url[:200]!r}: the secret must be {2 * limits.SECRET_BYTES} hex digits (RDV-1)")
    return parse_address(head, listening=False), int(rid), bytes.fromhex(secret)


def secret_for(master: bytes, rid: int) -> bytes:
    """Receiver `rid`'s secret: knowing it lets a process be that receiver and no other (RDV-2)."""
    return hmac.new(master, b"weightsync receiver %d" % rid, hashlib.sha256).digest()


def proof(secret: bytes, label: bytes, sender_nonce: bytes, receiver_nonce: bytes, rid: int) -> bytes:
    """HMAC-SHA256 of both challenges and the id: what shows knowledge of the secret (RDV-3)."""
    return hmac.new(secret, label + sender_nonce + receiver_nonce + rid.to_bytes(8, "big"), hashlib.sha256).digest()


JOIN, WELCOME = b"weightsync-join", b"weightsync-welcome"


@dataclass
class _Joiner:
    channel: Channel
    nonce: bytes
    deadline: float
    machine: JoinMachine


class Listener:
    """The sender's listening socket and the joins under way on it (RDV-5, RDV-6)."""

    def __init__(self, listen: str, num_workers: int, clock: Clock = monotonic):
        self.num_workers = num_workers
        self.clock = clock  # the join bound's (RDV-6)
        self.master = secrets.token_bytes(limits.SECRET_BYTES)
        address = parse_address(listen)
        path = address.path
        sock = socket.socket(address.family, socket.SOCK_STREAM)
        try:
            if address.kind == "tcp":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            elif path is not None and os.path.lexists(path):
                raise FileExistsError(f"{path} exists; choose a new path or remove it (RDV-8)")
            old = os.umask(0o177) if path is not None else None
            try:
                sock.bind(address.sockaddr)
            finally:
                if old is not None:
                    os.umask(old)
            if path is not None:
                os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
            sock.listen(128)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.address = _bound(address, sock)
        self.pending: list[_Joiner] = []

    def fileno(self) -> int:
        return self.sock.fileno()

    def url(self, rid: int) -> str:
        return f"{self.address.text}?receiver={rid}&secret={secret_for(self.master, rid).hex()}"

    def channels(self) -> list[Channel]:
        return [j.channel for j in self.pending]

    def timer(self) -> float | None:
        """Seconds until the next pending join runs out of time."""
        if not self.pending:
            return None
        return max(0.0, min(j.deadline for j in self.pending) - self.clock())

    def service(self, ready, can_join) -> list[tuple[int, Channel]]:
        """Accepts new connections, advances the joins under way; returns the accepted (id, channel).

        `can_join(rid)` says why receiver `rid` may not join now (it is live elsewhere), or None.
        """
        if self in ready:
            self._accept()
        accepted, still = [], []
        now = self.clock()
        for j in self.pending:
            outcome = self._advance(j, j.channel in ready, now, can_join)
            if outcome is None:
                still.append(j)
            elif outcome is not False:
                accepted.append(outcome)
        self.pending = still
        return accepted

    def _accept(self) -> None:
        for _ in range(_ACCEPTS_PER_PASS):
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if len(self.pending) >= limits.MAX_PENDING_JOINS:  # RDV-6: a flood costs nothing more; the oldest join goes
                self.pending.pop(0).channel.close()
            ch = Channel(conn, allowed=wire.FROM_JOINER, max_in=limits.MAX_BEFORE_PROOF, now=self.clock)  # RDV-9
            joiner = _Joiner(ch, secrets.token_bytes(limits.NONCE_BYTES), self.clock() + limits.JOIN_BOUND,
                             JoinMachine(listener=True))
            ch.session.attach(joiner.machine)  # the session judges the join by the join's table
            try:
                ch.send(Hello(PROTOCOL_VERSION, joiner.nonce))
            except transport.ChannelClosed:
                ch.close()
                continue
            self.pending.append(joiner)

    def _advance(self, j: _Joiner, readable: bool, now: float, can_join):
        """None while the join is under way; False when it ended without a receiver; else (id, channel)."""
        ch = j.channel
        j.machine.judge = lambda join: self._why_not(j, join, can_join)
        try:
            ch.flush()
            if readable:
                ch.fill()
            event = ch.next_event()  # the join table, the pre-proof frame bound (RDV-9), WIRE-7
        except (transport.ChannelClosed, RemoteProtocolError):
            ch.close()
            return False
        if event is None and now <= j.deadline:
            return None
        if not isinstance(event, Message):  # RDV-6: ended, or no Join within the join bound
            j.machine.event("join bound" if event is None else "channel closed")
            ch.close()
            return False
        join = cast(Join, event.msg)  # a joiner's channel lets nothing else through (wire.FROM_JOINER)
        if not j.machine.joined:
            _refuse(ch, j.machine.refusal or REFUSED)
            return False
        secret = secret_for(self.master, join.receiver)
        try:
            ch.send(Welcome(proof(secret, WELCOME, j.nonce, join.nonce, join.receiver)))
        except transport.ChannelClosed:
            ch.close()
            return False
        return join.receiver, ch  # its session now takes a receiver's messages, in frames up to WIRE-2's bound

    def _why_not(self, j: _Joiner, join: Any, can_join) -> str | None:
        """Why a Join is refused, or None: it must prove receiver `join.receiver`'s secret over both nonces, for an
        id that exists (RDV-3, RDV-4), and that receiver may join now (RDV-5)."""
        expected = proof(secret_for(self.master, join.receiver), JOIN, j.nonce, join.nonce, join.receiver)
        if not (hmac.compare_digest(expected, join.proof) and join.receiver < self.num_workers):
            return REFUSED
        return can_join(join.receiver)

    def close(self) -> None:
        for j in self.pending:
            j.channel.close()
        self.pending = []
        self.sock.close()
        if self.address.path is not None:
            try:
                os.unlink(self.address.path)
            except OSError:
                pass


def _refuse(ch: Channel, why: str) -> None:
    with contextlib.suppress(transport.ChannelClosed):
        ch.send(Refuse(why))
    ch.close()


def _bound(address: Address, sock: socket.socket) -> Address:
    """The address as bound: a TCP port 0 becomes the port the system chose."""
    if address.kind != "tcp":
        return address
    host, port = sock.getsockname()[:2]
    shown = f"[{address.sockaddr[0]}]" if address.family == socket.AF_INET6 else address.sockaddr[0]
    return Address("tcp", address.family, (address.sockaddr[0], port), f"tcp://{shown}:{port}")


def dial(url: str, deadline: Deadline) -> tuple[Channel, int]:
    """A receiver's side of the rendezvous: connect, prove the secret, check the sender's proof (RDV-3, RDV-7).

    A connection refused because nobody listens yet, or closed before Hello or
    before the answer to Join, is tried again until `deadline` (RDV-6). Returns
    the channel, ready for Init, and the receiver id.
    """
    address, rid, secret = parse_url(url)
    pause = _FIRST_PAUSE
    while True:
        sock = _connect(address, deadline, rid)
        # Before the sender proves the secret, whoever listens there may be a squatter: small frames only (RDV-9).
        ch = Channel(sock, allowed=wire.FROM_LISTENER, max_in=limits.MAX_BEFORE_PROOF,
                     takes_handles=address.carries_handles, now=deadline.clock)
        try:
            if _join(ch, address, rid, secret, deadline):  # its session now takes the sender's, in big frames
                return ch, rid
        except BaseException:
            ch.close()
            raise
        ch.close()  # closed without an answer: try again
        if deadline.expired():
            raise SyncTimeoutError([rid], None, hint=f"{address.text} closed every join without an answer (RDV-6)")
        time.sleep(deadline.cap(pause))
        pause = min(pause * 2, _LAST_PAUSE)


def _join(ch: Channel, address: Address, rid: int, secret: bytes, deadline: Deadline) -> bool:
    """One join on a new connection: True once welcomed, False when the connection closed without an answer."""
    machine = JoinMachine(listener=False)
    ch.session.attach(machine)  # the session judges each message of the join by the join's table
    hello = _expect(ch, deadline, rid, machine)
    if hello is None:
        return False
    assert isinstance(hello, Hello), "the join table lets only Hello through first"
    mine = secrets.token_bytes(limits.NONCE_BYTES)
    if not ch.send_bounded(Join(rid, mine, proof(secret, JOIN, hello.nonce, mine, rid)), deadline):
        raise SyncTimeoutError([rid], None, hint="the sender did not read the join (RDV-6)")
    machine.judge = lambda m: None if hmac.compare_digest(cast(Welcome, m).proof, proof(secret, WELCOME, hello.nonce, mine, rid)) \
        else "the sender could not prove that it knows the secret"  # RDV-7
    answer = _expect(ch, deadline, rid, machine)
    if answer is None:
        return False
    if isinstance(answer, Refuse):
        raise RefusedError(f"receiver {rid}: the sender at {address.text} refused the join: {answer.detail} (RDV-4)")
    return True


def _connect(address: Address, deadline: Deadline, rid: int) -> socket.socket:
    pause = _FIRST_PAUSE
    while True:
        sock = socket.socket(address.family, socket.SOCK_STREAM)
        try:
            sock.settimeout(max(deadline.cap(limits.JOIN_BOUND), 0.001))  # 0 would make it non-blocking
            sock.connect(address.sockaddr)
            return sock
        except (TimeoutError, ConnectionRefusedError, FileNotFoundError, BlockingIOError) as e:
            sock.close()
            if deadline.expired():
                raise SyncTimeoutError([rid], None, hint=f"nobody listens at {address.text} ({e}) (RDV-6)") from None
        except BaseException:
            sock.close()
            raise
        time.sleep(deadline.cap(pause))
        pause = min(pause * 2, _LAST_PAUSE)


#: A joiner's pauses between tries while nobody listens yet (RDV-6): doubling from the first to the last.
_FIRST_PAUSE, _LAST_PAUSE = 0.02, 0.5


def _expect(ch: Channel, deadline: Deadline, rid: int, machine: JoinMachine):
    """The next join message, judged by the session with the join table (RDV-3, RDV-7, INIT-2); None when the
    connection closed first (a retry)."""
    event = ch.wait_event(deadline)
    if event is None:
        raise SyncTimeoutError([rid], None, hint="no answer from the sender during the join (RDV-6)")
    if isinstance(event, Ended):
        machine.event("channel closed")
        return None
    return event.msg
