"""Receiver-program mutant: a Receive naming the slot the receiver last copied from is taken as unchanged, so the
copy is skipped, yet the new version is reported and acked. Senders reuse a slot once it is free, the last one
included. Violates ACK-3 (an Ack(v, ok) means the receiver holds version v).

From the outside round on receiver programs, where it survived.
"""

VIOLATES = ("ACK-3",)
KILLED_BY = ("conformance/test_receiver_wire.py::"
             "test_skipped_numbers_a_reused_slot_and_padding_between_arrays_change_nothing",)
OLD = """        else:
            for name, view in views.items():"""
NEW = """        elif slot_id != getattr(self, "_copied_from", None):  # BUG: the same slot again is taken as unchanged
            self._copied_from = slot_id
            for name, view in views.items():"""

if __name__ == "__main__":
    from _run import main

    main(OLD, NEW)
