"""What crosses a worker's control pipe when a command fails: `RemoteError`.

Both sides use it: the worker process builds one from the exception a command
raised (`describe_error`), naming the binding's error classes from the one list in
`names.ERROR_NAMES`; the suite's side reads it. It lives apart from both sides so
that each can import it (and unpickle it) without importing the other's code.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field

from .names import ERROR_NAMES
from .verdict import implementation_call, implementation_packages


@dataclass
class RemoteError:
    """An exception raised inside a worker, described with the binding's class names."""

    type: str
    kinds: tuple[str, ...]  # binding error classes it is an instance of
    message: str
    workers: list | None = None
    version: object = None
    details: dict = field(default_factory=dict)
    builtins: tuple[str, ...] = ()  # ValueError, TimeoutError, ... it is an instance of
    #: The requirement of the binding call it came out of, when it did (verdict.implementation_call).
    call: str | None = None

    def isa(self, name: str) -> bool:
        return name in self.kinds or name in self.builtins or name == self.type

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"


def describe_error(ws, e: BaseException) -> RemoteError:
    """`e` described with the classes of the binding `ws` (ERROR_NAMES) and the builtins it is an instance of."""
    kinds = tuple(n for n in ERROR_NAMES if isinstance(getattr(ws, n, None), type) and isinstance(e, getattr(ws, n)))
    builtins = tuple(c.__name__ for c in (ValueError, TypeError, TimeoutError, RuntimeError, OSError) if isinstance(e, c))
    details = getattr(e, "details", None)
    workers = getattr(e, "workers", None)
    return RemoteError(
        type(e).__name__,
        kinds,
        str(e) or traceback.format_exception_only(type(e), e)[-1].strip(),
        list(workers) if workers is not None else None,
        getattr(e, "version", None),
        {int(k): str(v) for k, v in details.items()} if isinstance(details, Mapping) else {},
        builtins,
        implementation_call(e, implementation_packages(ws)),
    )
