"""Probes of this process's OS resources: shared segments, child processes, threads, fds.

Leak checks (LIFE-5, CON-*) compare a probe before and after; the suite runs them
in its own process and the worker server runs `shm_segments` in the worker's. Linux
/proc only; elsewhere they report nothing to compare.
"""

from __future__ import annotations

import gc
import os
import sys
import threading

#: Targets of shared segments: a memfd, or a file under /dev/shm.
_SHARED = ("/memfd:", "/dev/shm/")


def shm_segments() -> frozenset[str]:
    """The shared segments this process maps or holds open, by inode.

    Unlike counts, a set survives a segment of an earlier test being freed meanwhile:
    what matters is whether any segment is here that was not before.
    """
    found = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "/memfd:" in line or "/dev/shm/" in line:
                    parts = line.split()
                    found.add(f"map {parts[4]}")
    except OSError:  # pragma: no cover - not Linux
        pass
    for fd, target in _fd_targets().items():
        if target.startswith(_SHARED):
            try:
                found.add(f"fd {os.stat(f'/proc/self/fd/{fd}').st_ino}")
            except OSError:  # closed meanwhile
                continue
    return frozenset(found)


def child_processes() -> dict[int, str]:
    """pid -> command line of this process's children (for "no process left after close")."""
    me, out = os.getpid(), {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid == me:
                with open(f"/proc/{d}/cmdline") as f:
                    out[int(d)] = f.read().replace("\0", " ").strip()
        except (OSError, ValueError, IndexError):
            continue
    return out


def new_threads(baseline: set[int]) -> list[str]:
    """Threads started since `baseline` (idents) that are not the suite's own or multiprocessing's."""
    out = []
    for t in threading.enumerate():
        if t.ident in baseline or not t.is_alive() or t.name.startswith("conformance-"):
            continue
        target = getattr(t, "_target", None)  # the fd-passing helper multiprocessing starts for handles
        if target is not None and getattr(target, "__module__", "") == "multiprocessing.resource_sharer":
            continue
        out.append(t.name)
    return out


def _fd_targets() -> dict[int, str]:
    """Each open descriptor of this process and what it points at (empty where there is no /proc)."""
    fds: dict[int, str] = {}
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:  # pragma: no cover - not Linux
        return fds
    for name in names:
        try:
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the descriptor listdir used, closed by now
            continue
    return fds


def freeze_imports() -> None:
    """Leaves what exists now (the imported modules: torch's are ~170,000 objects) out of every later collection.

    The leak checks collect garbage before they look (`open_fds`); a full collection over torch's objects
    costs ~0.1 s each. Called once the suite's imports are done and before any test made an object, so no
    test's garbage is ever frozen.
    """
    gc.collect()
    gc.freeze()


def open_fds() -> dict[int, str]:
    """Each open descriptor and what it points at, once garbage is collected.

    Leak checks compare these maps, not counts: a descriptor an earlier test's objects
    release meanwhile must neither hide a leak nor pass for one.
    """
    gc.collect()
    return _fd_targets()


def new_fds(before: dict[int, str], now: dict[int, str] | None = None) -> dict[int, str]:
    """The descriptors open `now` (default: open_fds()) that were not open, to the same thing, in `before`."""
    return {fd: what for fd, what in (open_fds() if now is None else now).items() if before.get(fd) != what}


def stack_of(ident: int | None) -> list:
    """The frames of thread `ident`, innermost first ([] when it is not running).

    `sys._current_frames()` takes the interpreter's thread-list lock, then makes frame
    objects; on CPython 3.11 an allocation there may start a collection, and an object it
    frees (a `threading.local`) takes that lock again: the thread deadlocks holding the
    GIL, and every thread of the process with it (python/cpython#106883). So collection is
    paused for the call."""
    paused = gc.isenabled()
    gc.disable()
    try:
        frame = sys._current_frames().get(ident) if ident is not None else None
    finally:
        if paused:
            gc.enable()
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames
