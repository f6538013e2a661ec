"""Receiver-program mutant: Init's protocol is compared whole ("1.1"), so a sender of a later minor version
(1.2, whose additions a 1.1 peer may ignore) is refused with Ready(error). Violates WIRE-6 (a minor version adds
only what an older peer of the same major may ignore) and INIT-2 (only another major is refused).

From the outside round on receiver programs, where it survived.
"""

VIOLATES = ("WIRE-6", "INIT-2")
KILLED_BY = ("conformance/test_receiver_wire.py::test_an_init_of_a_later_minor_version_is_taken",)
OLD = """if msg["protocol"].split(".")[0] != PROTOCOL_VERSION.split(".")[0]:
            self._refuse("""
NEW = """if msg["protocol"] != PROTOCOL_VERSION:  # BUG: the minor version compared too
            self._refuse("""

if __name__ == "__main__":
    from _run import main

    main(OLD, NEW)
