"""Bug: `Receiver(handle)` decides whether its handle came by fork from the process's *default* start
method (`multiprocessing.get_start_method()`) instead of from how the handle reached the process. A
trainer that set spawn as the default (as torch users do) but whose worker is forked outside
multiprocessing's Process (a prefork server, a library calling os.fork()) gets no error: the forked
worker inherits every receiver's channel end, so the trainer can no longer see any of them die. CON-2: `Receiver(handle)` MUST refuse, with
LocalProtocolError naming CON-2, a handle that reached its process by fork, "whatever started the
process". Plausible: checking the start method is the obvious reading of "started with spawn".

Seam: weightsync.transport.Handle.inherited.
"""
import multiprocessing as _mp

from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import transport as _transport

VIOLATES = "CON-2"


def _inherited(self):
    if _mp.get_start_method() != "fork":
        return None
    return (f"handle({self.receiver}) reached this process by fork; start workers with the spawn or forkserver "
            "start method (CON-2)")


_transport.Handle.inherited = _inherited
