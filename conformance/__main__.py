"""`python -m weightsync.conformance --impl=MODULE [pytest options] [TEST ...]`: the installed suite, from anywhere.

`pip install 'weightsync[conformance]'` installs the suite beside the package, with the spec it checks. This
runs it with its own settings (suite.ini) whatever directory it starts in, and never writes into the install:
no cache folder. `--receiver-cmd` and `--sender-cmd` work as in a checkout. Tests are named as the report
names them (`test_wire.py::test_...`); without one, the whole suite runs. Exit status as pytest's, plus the
suite's own: 1 a requirement violated, 4 a usage error (a module that does not expose the binding, a program
that cannot start), 6 inconclusive only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SUITE = Path(__file__).resolve().parent
#: How the report spells the command that runs one of its tests again.
RUNNER_ENV = "WEIGHTSYNC_CONFORMANCE_RUNNER"


def _in_suite(arg: str) -> str | None:
    """The suite's own path for a test named as the report names it, when the current directory has no such file."""
    head = arg.split("::", 1)[0]
    if arg.startswith("-") or not head.endswith(".py") or os.path.exists(head):
        return None
    return str(SUITE / arg) if (SUITE / head).is_file() else None


def main(argv: list[str] | None = None) -> int:
    import pytest

    args = list(sys.argv[1:] if argv is None else argv)
    named = [_in_suite(a) for a in args]
    args = [n or a for n, a in zip(named, args)]
    if not any(named):
        args.append(str(SUITE))
    os.environ.setdefault(RUNNER_ENV, "python -m weightsync.conformance")
    return int(pytest.main(["-c", str(SUITE / "suite.ini"), "--rootdir", str(SUITE), "-p", "no:cacheprovider", *args]))


if __name__ == "__main__":
    sys.exit(main())
