"""Mutant (the outside round of 2026-11-29, written without reading the suite): `Sender(listen="unix:PATH")` removes a socket file that already exists at PATH and binds
there, "cleaning up a stale socket" the way many servers do. If another trainer is listening there,
its address is silently hijacked: its workers' URLs now reach this sender. RDV-8: a sender MUST NOT
take over a path that exists. Plausible: unlink-before-bind is the common idiom for Unix sockets.

Seam: weightsync.hub.Listener (the class of the listener the sender makes).
"""
import os as _os
import stat as _stat

from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import hub as _hub
from weightsync import rendezvous as _rendezvous

VIOLATES = "RDV-8"
KILLED_BY = ('conformance/test_rendezvous.py::test_a_filesystem_socket_is_private_and_removed',)


class _Listener(_rendezvous.Listener):
    def __init__(self, listen, num_workers, *rest):
        try:
            path = _rendezvous.parse_address(listen).path
            if path is not None and _stat.S_ISSOCK(_os.lstat(path).st_mode):
                _os.unlink(path)  # a stale socket from an earlier run
        except (OSError, ValueError):
            pass
        super().__init__(listen, num_workers, *rest)


_hub.Listener = _Listener
