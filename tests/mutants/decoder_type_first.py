"""Mutant: the decoder reads a payload's message type from the map's first key, as a streaming decoder that
dispatches on the first pair does: a map whose first key is not `type` is refused as a violation. The
implementation talks to itself (its encoder writes `type` first), but a peer whose encoder writes keys in
another order is cut off. Violates WIRE-5 ("A decoder MUST accept any valid encoding of the same map (another key
order, ...)"). Plausible: the canonical form puts `type` first, and every frame the implementation ever sees from
itself has it there.

Seam: weightsync.wire.decode (wrapped: a first key other than `type` is refused).
"""

import msgpack

from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, wire  # noqa: F401

VIOLATES = "WIRE-5"
KILLED_BY = ("conformance/test_wire.py::test_answers_of_a_later_minor_version_or_in_any_encoding_are_taken",)

_orig = wire.decode


def _decode(data, allowed):
    try:
        pairs = msgpack.unpackb(data, raw=False, strict_map_key=False, object_pairs_hook=list)
    except Exception:  # noqa: BLE001 - the original decode judges it
        pairs = None
    if isinstance(pairs, list) and pairs and pairs[0][0] != "type":  # BUG: dispatches on the first key
        raise wire._violation(f"a payload must start with its type, not {pairs[0][0]!r:.40}", "WIRE-5")
    return _orig(data, allowed)


wire.decode = _decode
