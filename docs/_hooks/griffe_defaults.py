"""Griffe extension for the API reference: a default that names a constant shows its value.

`Sender(..., lease: float = limits.LEASE)` tells a reader nothing they can use; the
signature on the site should say `lease: float = 5.0`. For every parameter of every
function in the package whose default is `limits.NAME` (the module that holds every
number of the protocol), this replaces the default, in the rendered signature only,
by that constant's literal value as written in `weightsync/limits.py`. The code is not
changed, and the docstrings state the same value in seconds.
"""

from __future__ import annotations

from typing import Any

import griffe

_MODULE = "limits"


class ConstantDefaults(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if _MODULE not in pkg.members:
            return
        constants = {
            name: str(member.value)
            for name, member in pkg.members[_MODULE].members.items()
            if not member.is_alias and member.is_attribute and member.value is not None
        }
        for obj in _functions(pkg):
            for parameter in obj.parameters:
                default = str(parameter.default) if parameter.default is not None else ""
                prefix = f"{_MODULE}."
                if default.startswith(prefix) and default[len(prefix):] in constants:
                    parameter.default = constants[default[len(prefix):]]


def _functions(obj: griffe.Object | griffe.Alias) -> list[griffe.Function]:
    found: list[griffe.Function] = []
    for member in obj.members.values():
        if member.is_alias:
            continue
        if member.is_function:
            found.append(member)  # type: ignore[arg-type]
        elif member.is_class or member.is_module:
            found.extend(_functions(member))
    return found
