"""Bug: the decoder refuses a message (or a record inside one) that carries a key Table 12-1 does not list, as a
violation, instead of ignoring that key. A worker whose binding is of a later minor version (1.2 adds an optional
field to Ready or Ack, as WIRE-6 lets a minor version do), or a receiver written in another language that adds a
field of its own, is cut off at its first answer: `sender.connect()` raises ReceiverError (cause violation) for
a worker that accepted its Init, and a send fails for one that applied it. Both directions decode alike, so a
receiver likewise stops on a newer sender's Init or Receive. A careful implementer could have written it from
WIRE-3's "The value types are strict" and SEC-1's "Decoding MUST be total and bounded": a decoder hardened against
hostile peers accepts exactly the schema (as `cls(**fields)` does) and treats the rest as garbage. Breaks WIRE-3
("A key the table does not list is ignored") and WIRE-6 ("A minor version adds only what an older peer of the same
major may ignore: new optional fields").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, wire  # noqa: F401

VIOLATES = ("WIRE-3", "WIRE-6")


def _build(cls, fields, obj, what):
    if type(obj) is not dict:
        raise wire._violation(f"{what} must be a map, got {type(obj).__name__}", "WIRE-3")
    if not all(type(k) is str for k in obj):
        raise wire._violation(f"{what}'s map keys must be strings", "WIRE-3")
    known = {name for name, *_ in fields}
    extra = sorted(k for k in obj if k not in known and k != "type")
    if extra:  # BUG: exactly the schema: an unknown key is taken for garbage
        raise wire._violation(f"{what} has unknown field(s) {extra[:4]}", "WIRE-3")
    values = {}
    for name, check, *default in fields:
        if name in obj:
            values[name] = check(obj[name], f"{what}.{name}")
        elif default:
            values[name] = default[0]
        else:
            raise wire._violation(f"{what} lacks the field {name!r}", "WIRE-3")
    return cls(**values)


wire._build = _build
