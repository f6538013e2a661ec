"""Receiver-program mutant: a Receive whose version is not the last one plus one is taken as a violation, and the
channel cut. Versions to one receiver may skip numbers (a send to a subset, a version another receiver failed);
VER-3 asks only that they increase. Violates VER-3 (and so ACK-1: the Receive gets no Ack).

From the outside round on receiver programs, where it survived.
"""

VIOLATES = ("VER-3", "ACK-1")
KILLED_BY = ("conformance/test_receiver_wire.py::"
             "test_skipped_numbers_a_reused_slot_and_padding_between_arrays_change_nothing",)
OLD = 'if msg["version"] <= self._last:'
NEW = 'if msg["version"] != self._last + 1:  # BUG: versions may skip numbers'

if __name__ == "__main__":
    from _run import main

    main(OLD, NEW)
