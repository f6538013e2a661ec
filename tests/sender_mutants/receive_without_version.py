"""Sender-program mutant: a Receive goes out without its version ("the receiver knows it is the next one"), so
nothing matches an ack to its send. Violates VER-4.

Seam: wire.payload, for Receive.
"""

import msgpack

from weightsync import wire
from weightsync.messages import Receive

VIOLATES = ("VER-4",)
KILLED_BY = ("conformance/test_sender_wire.py::test_versions_arrive_in_order_bit_for_bit_and_a_send_returns_after_every_ack",)

_payload = wire.payload


def payload(msg, pack=msgpack.packb):
    if type(msg) is Receive:  # BUG: no version
        return pack({"type": "Receive", "slot": msg.slot,
                     "new_slots": [wire._as_map(s, wire.SLOTINFO) for s in msg.new_slots]})
    return _payload(msg, pack)


wire.payload = payload

if __name__ == "__main__":
    from _run import main

    main()
