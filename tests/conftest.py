"""Shared fixtures: senders with receivers in this process (fast) or in worker processes."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

import weightsync as ws

from .workers import pattern, start_workers, stop_workers

MANIFEST = [
    ("a.weight", "float32", (8, 4)),
    ("a.bias", "float32", (8,)),
    ("half", "bfloat16", (3, 5)),
    ("steps", "int64", ()),
    ("mask", "bool", (6,)),
    ("empty", "float16", (0, 3)),
]


@pytest.fixture
def weights():
    return pattern(MANIFEST, 0)


def connect_all(sender, receivers, timeout=10.0, **kwargs):
    """Runs sender.connect beside the receivers' connects, as separate processes would."""
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(sender.connect, timeout, **kwargs)
        versions = [r.connect(timeout=timeout) for r in receivers]
        fut.result(timeout=timeout + 5)
    return versions


@pytest.fixture
def local():
    """Builds a sender and in-process receivers; closes everything afterwards."""
    made = []

    def build(weights, n=3, modes="push", targets=None, zero_copy=False, **sender_kwargs):
        sender = ws.Sender(weights, n, **sender_kwargs)
        modes = [modes] * n if isinstance(modes, str) else modes
        targets = targets or [None] * n
        receivers = [
            ws.Receiver(sender.handle(i), targets[i], mode=modes[i], zero_copy=zero_copy) for i in range(n)
        ]
        made.append((sender, receivers))
        connect_all(sender, receivers)
        return sender, receivers

    yield build
    for sender, receivers in made:
        sender.close()
        for r in receivers:
            r.close()


def assert_holds(receiver, expected: dict[str, torch.Tensor], version: int, req: str = "ACK-3"):
    """Bit-for-bit: the receiver holds `version` and exactly `expected`."""
    assert receiver.version == version, f"{req} violated: receiver {receiver.id} holds {receiver.version}, expected {version}"
    with receiver.reading():
        got = dict(receiver.weights)
    assert list(got) == list(expected)
    for name, t in expected.items():
        g = got[name]
        assert g.dtype == t.dtype and g.shape == t.shape, f"{req} violated: {name}"
        assert torch.equal(g.detach().reshape(-1).view(torch.uint8), t.reshape(-1).view(torch.uint8)), (
            f"{req} violated: receiver {receiver.id} {name} differs from version {version}"
        )


def thread_names() -> set[str]:
    return {t.name for t in threading.enumerate()}


def shm_left(before: set[str], settle: float = 30.0) -> set[str]:
    """The /dev/shm entries made since `before` that stay. Another program on a busy machine makes and removes its
    own (a spawned process's semaphores live as long as it does), so an entry counts as left only if it is still
    there after `settle` seconds; what the code under test leaked never goes."""
    deadline = time.monotonic() + settle
    while True:
        left = set(os.listdir("/dev/shm")) - before
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.5)


@pytest.fixture(scope="module")
def workers():
    """Three worker processes for the whole module (each imports torch once)."""
    pool = start_workers(3)
    yield pool
    stop_workers(pool)


def pytest_collection_modifyitems(config, items):
    """The test that judges the suite's run against the reference waits for that run: last, so that every other
    test runs beside the suite instead of after it."""
    items.sort(key=lambda item: item.name == "test_suite_passes_the_reference")


def pytest_collection_finish(session):
    """The suite's run against the reference takes most of the fast layer: start it as soon as it is chosen, so it
    runs beside the other tests (test_conformance_mutants.test_suite_passes_the_reference judges it)."""
    if session.config.option.collectonly or hasattr(session.config, "workerinput"):
        return
    if any(item.name == "test_suite_passes_the_reference" for item in session.items):
        from .test_conformance_mutants import start_reference_run

        start_reference_run()


def pytest_sessionfinish(session):
    from .test_conformance_mutants import stop_reference_run

    stop_reference_run()
