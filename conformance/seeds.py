"""Hypothesis for the suite: its profiles, the run's seed, saved examples (--conformance-replay), and the command
that runs one test again.

A verdict must depend on the implementation and the run's seed alone: no example database unless asked for, one
folder of saved examples per subject, and a seed in every run's header so that any failure can be run again.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from . import timing as tm
from .subject import program_of

#: Set by `python -m weightsync.conformance`: the command a report gives to run one test again.
RUNNER_ENV = "WEIGHTSYNC_CONFORMANCE_RUNNER"
#: Seconds Hypothesis may spend shrinking one failure, at timescale 1 (its own default is 300 s): against an
#: implementation that fails, a stranger's run should end in minutes; a shorter example is worth less than that.
SHRINK_SECONDS = 45.0

_common = dict(
    # No example database unless --conformance-replay: a verdict depends on the implementation and the run's seed,
    # never on examples an earlier run (perhaps of another implementation) left in the working directory.
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
settings.register_profile("conformance-default", max_examples=15, stateful_step_count=20, **_common)
#: For runs whose only question is pass or fail (the mutant tests): no shrinking.
settings.register_profile(
    "conformance-ci", max_examples=15, stateful_step_count=20,
    phases=[Phase.explicit, Phase.reuse, Phase.generate], **_common,
)
settings.register_profile("conformance-thorough", max_examples=150, stateful_step_count=40, **_common)


def configure(config) -> None:
    """The profile, the shrinking bound, the seed, the examples' count and the replay folder of this run."""
    if not config.getoption("--hypothesis-profile", default=None):
        settings.load_profile(f"conformance-{config.getoption('--conformance-profile')}")
    _bound_shrinking()
    if not hasattr(config, "workerinput") and config.getoption("hypothesis_seed", default=None) is None:
        # Every run has a seed, printed in its header, so that any failure it finds can be run again
        # (xdist's workers get the same option).
        config.option.hypothesis_seed = str(random.SystemRandom().randrange(2**31))
    examples = config.getoption("--conformance-examples")
    if examples is not None:
        if examples < 1:
            raise pytest.UsageError(f"--conformance-examples must be at least 1, got {examples}")
        settings.register_profile("conformance-examples", parent=settings.default, max_examples=examples)
        settings.load_profile("conformance-examples")
    replay = config.getoption("--conformance-replay")
    if replay:
        db = ReplayDatabase(Path(replay) / _subject_key(config))
        settings.register_profile("conformance-replay", parent=settings.default, database=db)
        settings.load_profile("conformance-replay")
        config._conformance_replay = db


def _bound_shrinking() -> None:
    """Cap Hypothesis's shrinking time (an engine constant; where a Hypothesis release lacks it, nothing)."""
    from hypothesis.internal.conjecture import engine

    if hasattr(engine, "MAX_SHRINKING_SECONDS"):
        engine.MAX_SHRINKING_SECONDS = min(engine.MAX_SHRINKING_SECONDS, SHRINK_SECONDS * tm.SCALE)


class ReplayDatabase(DirectoryBasedExampleDatabase):
    """Hypothesis's directory database, counting the saved examples it hands back (each replay is announced)."""

    def __init__(self, path: Path):
        super().__init__(str(path))
        self.folder = path
        self.replayed = 0

    def fetch(self, key: bytes):
        for value in super().fetch(key):
            self.replayed += 1
            yield value

    def saved(self) -> int:
        return sum(len(files) for _, _, files in os.walk(self.folder)) if self.folder.is_dir() else 0


def _subject_key(config) -> str:
    """The folder of saved examples of one subject: the --impl module, or a digest of the program's command."""
    program = program_of(config)
    if program:
        return "program-" + hashlib.sha256(program.encode()).hexdigest()[:16]
    return "impl-" + re.sub(r"[^A-Za-z0-9_.-]", "_", config.getoption("--impl"))


def reproduce_command(config, nodeid: str) -> str:
    """One line that runs `nodeid` again as this run did: same subject, seed, profile and timescale."""
    runner = shlex.split(os.environ.get(RUNNER_ENV, "python -m pytest"))  # the installed suite sets its own
    parts = [*runner, nodeid, "-n", "0", f"--hypothesis-seed={config.getoption('hypothesis_seed')}",
             f"--conformance-profile={config.getoption('--conformance-profile')}", f"--conformance-timescale={tm.SCALE:g}"]
    for opt in ("--impl", "--receiver-cmd", "--sender-cmd", "--protocol-version", "--xfails-file", "--conformance-replay"):
        value = config.getoption(opt)
        if value and not (opt == "--impl" and program_of(config)) and not (opt == "--protocol-version" and value == "1.1"):
            parts.append(f"{opt}={value}")
    return shlex.join(parts)


def replay_note(config) -> str | None:
    """What this process replayed of saved examples, if anything (said beside every failure it finds)."""
    db = getattr(config, "_conformance_replay", None)
    if db is None or not db.replayed:
        return None
    return (f"this run first replayed {db.replayed} example(s) saved by an earlier run in {db.folder} "
            "(--conformance-replay); delete that folder to start afresh")
