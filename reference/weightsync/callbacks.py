"""The hub's two callbacks into its owner, held weakly: the owner holds the hub, never the other way round."""

from __future__ import annotations

import weakref
from collections.abc import Callable

from .peers import Peer

#: What the hub calls when an answer settles one version for one receiver: (version, receiver id, cause, detail).
Settle = Callable[[int, int, str, str], None]
#: What the hub calls when a receiver joined by URL and must be sent its Init.
Joined = Callable[[Peer], None]


def weakly(method: Callable[..., None]) -> Callable[..., None]:
    """`method` as a callback that does not keep its object alive: the hub must not hold its owner (the owner
    holds the hub, and an unclosed sender is released when it is collected)."""
    owner, func = weakref.ref(method.__self__), method.__func__  # type: ignore[attr-defined]  # a bound method

    def call(*args: object) -> None:  # one dereference per answer, not a bound method rebuilt (WeakMethod)
        obj = owner()
        if obj is not None:
            func(obj, *args)

    return call


def unbound(*args: object) -> None:
    raise AssertionError("Hub.bind() gives the callbacks before any channel is served")
