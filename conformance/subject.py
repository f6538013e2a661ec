"""What the suite tests: the --impl module, or a program (--receiver-cmd, --sender-cmd), and the role it plays.

The suite uses nothing of a module but the spec's Python binding (API-1..API-5); a module that lacks a name of
it, or a program that cannot start, is a usage error here, before any test runs. In program mode neither torch
nor any implementation is imported.
"""

from __future__ import annotations

import importlib
import shlex
import sys
from pathlib import Path

import pytest

from .names import KNOWN_CAPABILITIES, ROLES, required_names, roles
from .verdict import implementation_packages, judge

#: Program mode runs these modules only (by the role of the program); the others need the binding.
PROGRAM_MODULES = {"receiver": ("test_receiver_wire",), "sender": ("test_sender_wire",)}


def configure(config) -> None:
    """Load the subject: the module (or None for a program), then refuse what it cannot be tested by."""
    config._conformance_impl = None if program_of(config) else _load_impl(config.getoption("--impl"))
    _check_modules_fit_role(config)
    from .preflight import preflight  # a program that cannot start: a usage error, before any test

    preflight(config)


def impl(config):
    """The module under test; None in program mode."""
    return config._conformance_impl


def program_of(config) -> str | None:
    """The command of the program under test, in program mode (either role)."""
    return config.getoption("--receiver-cmd") or config.getoption("--sender-cmd")


def role_of(config) -> str | None:
    """The one role under test, "receiver" or "sender" (a program, or a one-role module, API-12); None for both."""
    if config.getoption("--receiver-cmd"):
        return "receiver"
    if config.getoption("--sender-cmd"):
        return "sender"
    ws = getattr(config, "_conformance_impl", None)
    mine = roles(ws.CAPABILITIES) if ws is not None else frozenset(ROLES)
    return next(iter(mine)) if len(mine) == 1 else None


def sender_command(config) -> str:
    """The sender program of test_sender_wire: --sender-cmd, or for a sender-only module (API-12) the binding's
    sender program (conformance/senders/reference_sender.py) over that module."""
    given = config.getoption("--sender-cmd")
    if given:
        return given
    program = Path(__file__).resolve().parent / "senders" / "reference_sender.py"
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(program))} {{layout}} {{receivers}} " + \
        shlex.quote(config.getoption("--impl"))


def _load_impl(name: str):
    try:
        mod = importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - any import failure is a usage error here
        raise pytest.UsageError(f"--impl={name}: cannot import it ({type(e).__name__}: {e})") from None
    caps = getattr(mod, "CAPABILITIES", frozenset())
    missing = [n for n in required_names(caps if isinstance(caps, frozenset) else ()) if not hasattr(mod, n)]
    if missing:
        raise pytest.UsageError(
            f"--impl={name} does not expose the weightsync binding: missing {', '.join(missing)} (API-1..API-5; "
            "a module of one role names it, 'sender' or 'receiver', in CAPABILITIES, API-12). "
            "Write a shim module that re-exports these names (docs/conformance.md)."
        )
    if not isinstance(caps, frozenset) or not all(isinstance(c, str) for c in caps):
        raise pytest.UsageError(f"--impl={name}: CAPABILITIES must be a frozenset of str, got {caps!r} (API-5)")
    unknown = sorted(caps - KNOWN_CAPABILITIES)
    if unknown:
        raise pytest.UsageError(
            f"--impl={name}: CAPABILITIES names unknown parts {unknown}; known: {sorted(KNOWN_CAPABILITIES)} (API-5)"
        )
    return mod


def _check_modules_fit_role(config) -> None:
    """A module named on the command line is collected whatever pytest_ignore_collect says: one that a program
    or one-role module cannot be tested by is a usage error, not a run of tests that cannot decide."""
    role = role_of(config)
    if not role:
        return
    named = {Path(arg.partition("::")[0]) for arg in config.args}
    other = sorted(p.name for p in named if p.suffix == ".py" and p.stem.startswith("test_")
                   and p.stem not in PROGRAM_MODULES[role])
    if other:
        what = f"a {role} program" if program_of(config) else f"a {role}-only module (API-12)"
        raise pytest.UsageError(f"{', '.join(other)}: not run for {what}, which is tested by "
                                f"{', '.join(m + '.py' for m in PROGRAM_MODULES[role])} alone")


def judged(exc: BaseException, config):
    """verdict.judge with what it needs to know of the implementation: its timeout error and its packages."""
    ws = impl(config)
    if ws is None:
        return judge(exc)
    return judge(exc, (ws.SyncTimeoutError,), implementation_packages(ws))
