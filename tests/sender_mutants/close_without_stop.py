"""Sender-program mutant: close() shuts every channel without Stop ("they see the end of the channel anyway"),
so a worker cannot tell a trainer that finished from one that crashed. Violates LIFE-4.

Seam: Hub.stop (close()'s Stop to each receiver the table lets it stop), which steps the table and writes nothing.
"""

from weightsync.hub import Hub

VIOLATES = ("LIFE-4",)
KILLED_BY = ("conformance/test_sender_wire.py::test_close_sends_stop_to_every_receiver",)


def _stop_silently(self, peer):
    if peer.machine.stoppable:
        peer.machine.send_stop()  # BUG: the receiver is stopped in the table, and no Stop is written


Hub.stop = _stop_silently

if __name__ == "__main__":
    from _run import main

    main()
