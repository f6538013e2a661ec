"""The foundation issue's acceptance run: a user's trainer, public binding only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes  # real worker processes: .ci/run's second layer


@pytest.mark.timeout(300)
def test_client_written_outside_the_project():
    """SEND-1, SEND-3, ACK-3, BAD-4, VER-2, INIT-3, LIFE-4, CONS-5 end to end in real processes."""
    script = Path(__file__).with_name("client_example.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240,
                         cwd="/", env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert out.stdout.rstrip().endswith("client: all checks passed")
    assert "FAIL" not in out.stdout
