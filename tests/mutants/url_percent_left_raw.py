"""Mutant: `sender.url(i)` writes a socket path or abstract name with its `?` escaped but its `%` left raw, so a
name holding '%' and two hex digits (`run%41`, a URL-encoded run id) is read back percent-decoded as another name
(`runA`): the worker dials a socket nobody listens on. Violates RDV-1 (in a path or name, '%' and '?' are written
%25 and %3F; a URL holds everything a process needs to join). From a fourteenth outside round.

Seam: rendezvous._escape.
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, rendezvous  # noqa: F401

VIOLATES = ("RDV-1",)
KILLED_BY = ("conformance/test_rendezvous.py::test_urls_at_the_edges_of_the_grammar_join",)


def _escape(text: str) -> str:
    return text.replace("?", "%3F")  # BUG: only the character that would start the query


rendezvous._escape = _escape
