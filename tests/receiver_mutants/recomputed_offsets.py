"""Receiver-program mutant: the arrays' offsets are worked out by packing them in manifest order at 64-byte
boundaries, not read from each Entry's `offset`. Right for a sender that packs tightly, wrong bytes (acked ok) for
one that leaves more padding. Violates WIRE-8 ("a slot's buffer holds each array of the manifest at its Entry's
`offset`") and so ACK-3.

From the outside round on receiver programs (a colleague's copy of the NumPy receiver), where it survived.
"""

VIOLATES = ("ACK-3", "WIRE-8")
KILLED_BY = ("conformance/test_receiver_wire.py::"
             "test_skipped_numbers_a_reused_slot_and_padding_between_arrays_change_nothing",)
OLD = 'dt, off, n = DTYPES.get(e["dtype"]), e["offset"], e["nbytes"]'
NEW = 'dt, off, n = DTYPES.get(e["dtype"]), (end + 63) // 64 * 64, e["nbytes"]  # BUG: ignores Entry.offset'

if __name__ == "__main__":
    from _run import main

    main(OLD, NEW)
