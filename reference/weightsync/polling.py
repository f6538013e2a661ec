"""Polls: the sender's over its channels, one set kept between calls, and the short spin before any wait sleeps.

Most sends watch the same channels as the last one, so the set is rebuilt only when the
channels, or which of them have bytes to write, change. Every wait that may sleep, the
sender's for answers and a receiver's for its next message, first polls without sleeping
for a moment (`Spin`, `limits.SPIN_POLLS`): a small model's answer comes within it, and a
process woken on an idle core of a virtual machine takes tens of microseconds longer than
one that never slept. Between those polls it yields the core, so that a spinning process
gives way to any other that can run there (a receiver, on a machine with fewer cores than
processes); a process alone on its core goes straight on. A spin that found nothing rests
for the next few waits: messages that come far apart cost no spin each.
"""

from __future__ import annotations

import os
import select
from typing import TYPE_CHECKING

from . import limits
from .clock import monotonic  # real time: a spin is about the core, not the protocol's clock

if TYPE_CHECKING:
    from .rendezvous import Listener
    from .transport import Channel

#: What poll() reports for a peer that hung up, and what a read waits for (bytes, or the peer's end).
HUP_EVENTS = select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0x2000)
IN_EVENTS = select.POLLIN | getattr(select, "POLLRDHUP", 0x2000)


class Spin:
    """The spin before one poller's waits: up to SPIN_POLLS polls that do not sleep, the core yielded between
    them, then the sleep. After a spin that found nothing the next SPIN_REST waits sleep at once, so that a
    process whose messages come far apart (a training step between versions) spins only now and then."""

    __slots__ = ("_rest",)

    def __init__(self) -> None:
        self._rest = 0

    def poll(self, poller: select.poll, millis: int) -> list[tuple[int, int]]:
        """`poller.poll(millis)`, spinning first unless this spin rests (see the class). The spin ends after
        SPIN_SECONDS, and counts toward `millis`: on a loaded core each yield may give it away for milliseconds,
        and 400 of those would outlast a Heartbeat's interval (NET-4)."""
        if millis and self._rest:
            self._rest -= 1
        elif millis:
            start = monotonic()
            end = start + (limits.SPIN_SECONDS if millis < 0 else min(limits.SPIN_SECONDS, millis / 1000))
            for _ in range(limits.SPIN_POLLS):
                events = poller.poll(0)
                if events:
                    return events
                os.sched_yield()
                if monotonic() >= end:
                    break
            self._rest = limits.SPIN_REST
            if millis > 0:
                millis = max(0, millis - int((monotonic() - start) * 1000))
        return poller.poll(millis)


class PollSet:
    """A poll over the wake pipe, the listener if any, and the channels last `watch`ed; each event maps back to
    its item (None for the wake pipe)."""

    def __init__(self, wake_fd: int, listener: Listener | None):
        self._wake_fd, self._listener = wake_fd, listener
        self._key: list | None = None
        self._poller = select.poll()
        self._spin = Spin()
        self._items: dict[int, Channel | Listener | None] = {}

    def watch(self, channels: list[Channel]) -> None:
        """Polls `channels` from now on, for room to write as well where bytes wait to go out."""
        key = []  # a loop, not a comprehension: this runs twice a send
        for ch in channels:
            key.append((ch, ch.wants_write))
        if key == self._key:
            return
        poller = select.poll()
        items: dict[int, Channel | Listener | None] = {self._wake_fd: None}
        poller.register(self._wake_fd, select.POLLIN)
        if self._listener is not None:
            items[self._listener.fileno()] = self._listener
            poller.register(self._listener.fileno(), select.POLLIN)
        for ch, writes in key:
            items[ch.fileno()] = ch
            poller.register(ch.fileno(), IN_EVENTS | (select.POLLOUT if writes else 0))
        self._key, self._poller, self._items = key, poller, items

    def ready_now(self) -> list:
        """What has bytes, an end or a join waiting, without waiting."""
        return self._ready(self._poller.poll(0), IN_EVENTS | HUP_EVENTS | select.POLLNVAL)

    def wait(self, millis: int) -> list:
        """What is ready within `millis` (-1: no bound), spinning first (see the module)."""
        return self._ready(self._spin.poll(self._poller, millis), -1)

    def _ready(self, events: list[tuple[int, int]], wanted: int) -> list:
        ready = []
        for fd, ev in events:
            if ev & wanted:
                item = self._items[fd]
                if item is not None and item is not self._listener:  # a channel
                    item.hup = bool(ev & HUP_EVENTS)  # type: ignore[union-attr]  # fill() reads on to the end of file
                ready.append(item)
        return ready
