"""Sender-program mutant: a slot a zero-copy receiver holds counts as free once no message names it, so the
next send may write the bytes that receiver is reading. Violates ZC-2 (and SLOT-2).

Seam: PeerMachine.pins (the slots a receiver may read), without the held slot.
"""

from weightsync import protocol

VIOLATES = ("ZC-2", "SLOT-2")
KILLED_BY = ("conformance/test_sender_wire.py::test_a_slot_a_zero_copy_receiver_holds_is_never_written",)

protocol.PeerMachine.pins = lambda self: set(self.pending.values()) if self.active else set()  # BUG: not self.held

if __name__ == "__main__":
    from _run import main

    main()
