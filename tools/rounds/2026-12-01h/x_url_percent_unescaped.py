"""Bug: `sender.url(i)` (and `sender.address`) write a socket path or abstract name with its `?` escaped as `%3F` but
its `%` left as it is. A trainer whose socket name or path holds a `%` (a scheduler's job-name pattern, a directory
named after a URL-encoded run id, `listen="unix:@run%2541"` for the name `run%41`) hands out URLs that name another
socket: the worker percent-decodes `run%41` to `runA`, finds nobody there, and its connect() times out while the
trainer's connect() waits for it. A careful implementer could have written it from RDV-1's reason for the escape ("a
reader ... percent-decodes the rest of the part before the first `?`"): only `?` would cut the address short, so
only `?` seemed to need escaping; but a reader that percent-decodes reads every `%` as the start of an escape.
Breaks RDV-1 ("In a path or name, `%` and `?` are written `%25` and `%3F`, in the URL and in `listen` alike"; "A URL
holds everything a process needs to join").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, rendezvous  # noqa: F401

VIOLATES = ("RDV-1",)


def _escape(text: str) -> str:
    return text.replace("?", "%3F")  # BUG: only the character that would start the query


rendezvous._escape = _escape
