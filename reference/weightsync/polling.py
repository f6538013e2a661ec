"""The sender's poll over its channels: one poll set kept between calls, and a short spin before a wait sleeps.

Most sends watch the same channels as the last one, so the set is rebuilt only when the
channels, or which of them have bytes to write, change. A wait for answers first polls
without sleeping for a moment (`limits.SPIN_POLLS`): a small model's answers come within
it, and a process woken on an idle core of a virtual machine takes tens of microseconds
longer than one that never slept. It spins only while it waits on no more receivers than
this process has cores, so that on a small machine it does not take the core a receiver needs.
"""

from __future__ import annotations

import os
import select
from typing import TYPE_CHECKING

from . import limits
from .transport import HUP_EVENTS, IN_EVENTS, Channel

if TYPE_CHECKING:
    from .rendezvous import Listener

#: The cores this process may run on.
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class PollSet:
    """A poll over the wake pipe, the listener if any, and the channels last `watch`ed; each event maps back to
    its item (None for the wake pipe)."""

    def __init__(self, wake_fd: int, listener: Listener | None):
        self._wake_fd, self._listener = wake_fd, listener
        self._key: tuple | None = None
        self._poller = select.poll()
        self._items: dict[int, Channel | Listener | None] = {}
        self._channels = 0

    def watch(self, channels: list[Channel]) -> None:
        """Polls `channels` from now on, for room to write as well where bytes wait to go out."""
        key = tuple((ch, ch.wants_write) for ch in channels)
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
        self._key, self._poller, self._items, self._channels = key, poller, items, len(key)

    def ready_now(self) -> list:
        """What has bytes, an end or a join waiting, without waiting."""
        return self._ready(self._poller.poll(0), IN_EVENTS | HUP_EVENTS | select.POLLNVAL)

    def wait(self, millis: int) -> list:
        """What is ready within `millis` (-1: no bound), spinning first while a core is spare (see the module)."""
        poller, events = self._poller, []
        if millis and self._channels <= CORES:
            for _ in range(limits.SPIN_POLLS):
                events = poller.poll(0)
                if events:
                    break
        return self._ready(events or poller.poll(millis), -1)

    def _ready(self, events: list[tuple[int, int]], wanted: int) -> list:
        ready = []
        for fd, ev in events:
            if ev & wanted:
                item = self._items[fd]
                if isinstance(item, Channel):
                    item.hup = bool(ev & HUP_EVENTS)  # fill() reads on to the end of file it announces
                ready.append(item)
        return ready
