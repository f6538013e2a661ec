"""Seeds and saved examples of the suite (issue 39): a verdict depends on the subject and the seed alone.

A false verdict saved in `.hypothesis/` once replayed in every later run, and the database was shared by every
`--impl` run from one directory. Now the suite keeps no database unless `--conformance-replay` asks, keyed by
subject; every run has a seed, printed, that runs it again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import settings

from conformance import seeds

ROOT = Path(__file__).resolve().parent.parent
FAST_TEST = "conformance/test_traceability.py::test_every_tested_id_exists_in_the_spec"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "reference"), str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "pytest", str(ROOT / FAST_TEST), "-n", "0", "-p", "no:cacheprovider",
                           f"--rootdir={ROOT}", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_suites_profiles_keep_no_example_database():
    for name in ("default", "ci", "thorough"):
        assert settings.get_profile(f"conformance-{name}").database is None, name


def _config(**options):
    return SimpleNamespace(getoption=lambda name: options.get(name))


def test_saved_examples_are_kept_per_subject():
    keys = {seeds._subject_key(_config(**{"--impl": impl})) for impl in ("weightsync", "mypkg.shim")}
    keys |= {seeds._subject_key(_config(**{"--receiver-cmd": cmd})) for cmd in ("./a {url}", "./b {url}")}
    keys.add(seeds._subject_key(_config(**{"--sender-cmd": "./a {url}"})))
    assert len(keys) == 4, keys  # one folder per module, one per program's command (whichever role it plays)


@pytest.mark.processes  # two runs of the suite in a subprocess: seconds each on a busy machine
def test_a_run_prints_its_seed_and_replays_nothing_unless_asked(tmp_path):
    """The header gives the seed; with --conformance-replay the folder of this implementation and its count."""
    plain = _run("--hypothesis-seed=1234", cwd=tmp_path)
    assert plain.returncode == 0, plain.stdout[-2000:]
    assert "examples drawn afresh from seed 1234 (run again with --hypothesis-seed=1234)" in plain.stdout
    assert "replay" not in plain.stdout.split("short test summary")[0].lower()
    assert not (tmp_path / ".hypothesis").exists(), "a run without --conformance-replay saved examples"
    saved = tmp_path / "saved"
    (saved / "impl-weightsync" / "somekey").mkdir(parents=True)
    (saved / "impl-weightsync" / "somekey" / "example").write_bytes(b"\x00")
    replay = _run(f"--conformance-replay={saved}", cwd=tmp_path)
    assert replay.returncode == 0, replay.stdout[-2000:]
    assert f"first replaying the 1 saved in {saved / 'impl-weightsync'} (--conformance-replay)" in replay.stdout
