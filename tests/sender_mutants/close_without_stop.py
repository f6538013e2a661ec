"""Sender-program mutant: close() shuts every channel without Stop ("they see the end of the channel anyway"),
so a worker cannot tell a trainer that finished from one that crashed. Violates LIFE-4.

Seam: messages.Stop as the sender module sees it, made a frame the channel drops.
"""

from weightsync import sender, transport

VIOLATES = ("LIFE-4",)
KILLED_BY = ("conformance/test_sender_wire.py::test_close_sends_stop_to_every_receiver",)


def _no_stop():
    raise transport.ChannelClosed("mutant: no Stop")  # BUG: close() swallows this and sends nothing


sender.Stop = _no_stop

if __name__ == "__main__":
    from _run import main

    main()
