"""Runs the reference sender program (conformance/senders/reference_sender.py) after a mutant patched the reference."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "conformance" / "senders"))


def main() -> None:
    import reference_sender

    sys.exit(reference_sender.main(*sys.argv[1:]))
