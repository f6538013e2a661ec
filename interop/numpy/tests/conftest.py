"""Fixtures: receiver processes (subprocess) cleaned up after each test, a fresh address."""
import uuid

import pytest
from support import Proc


@pytest.fixture
def procs():
    started: list[Proc] = []

    def start(*argv: str) -> Proc:
        proc = Proc(*map(str, argv))
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.reader.join(30)
        for f in (proc.p.stdout, proc.p.stderr):
            f.close()


@pytest.fixture
def address():
    return f"unix:@wsnp-{uuid.uuid4().hex}"
