"""The URL reader matches the secret against the form url() writes (64 lowercase hex digits), so a URL whose secret
was upper-cased on its way (a config system, a shell script) is refused with ValueError; RDV-1 says the secret is
written lowercase and read in either case."""
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__  # noqa: F401
import re as _re
from weightsync import limits as _limits
from weightsync import rendezvous as _rdv

VIOLATES = ("RDV-1",)

_rdv._SECRET = _re.compile(f"[0-9a-f]{{{2 * _limits.SECRET_BYTES}}}")  # BUG: lowercase hex only
