"""weightsync.torchrl with real TorchRL collectors (torchrl 0.14.1; skipped where torchrl does not import).

Two workers on PendulumEnv, a policy whose action is its bias: the bias is set to
the version number before each update, so every frame names the weights that
produced it and can be checked against its ("next", "policy_version").
"""

from __future__ import annotations

import gc
import os
import signal
import threading
import time

import pytest

torchrl = pytest.importorskip("torchrl", reason="torchrl is not installed (pip install torchrl==0.14.1)")

from torchrl.collectors import MultiAsyncCollector, MultiSyncCollector  # noqa: E402
from torchrl.weight_update.weight_sync_schemes import WeightSyncScheme  # noqa: E402

import weightsync as ws  # noqa: E402
from weightsync.torchrl import WeightsyncScheme  # noqa: E402

from .torchrl_parts import make_env, make_policy, set_constant  # noqa: E402

pytestmark = [pytest.mark.processes, pytest.mark.torchrl, pytest.mark.timeout(300)]


def frames(batch):
    """(action, version) of every frame of a batch."""
    actions = batch["action"].flatten().tolist()
    versions = batch["next", "policy_version"].flatten().tolist()
    return list(zip(actions, versions))


def collector(cls, mode, **kwargs):
    policy = make_policy()
    set_constant(policy, 0.0)
    scheme = WeightsyncScheme(mode=mode, timeout=30)
    col = cls([make_env] * 2, policy=policy, frames_per_batch=20, total_frames=-1,
              weight_sync_schemes={"policy": scheme}, track_policy_version=True, **kwargs)
    return col, policy, scheme


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_each_batch_after_an_update_uses_exactly_the_new_weights(mode):
    col, policy, scheme = collector(MultiSyncCollector, mode)
    try:
        for i, batch in enumerate(col):
            assert set(frames(batch)) == {(float(i), i)}, f"batch {i} after {i} updates: {sorted(set(frames(batch)))}"
            if i == 4:
                break
            set_constant(policy, float(i + 1))
            col.update_policy_weights_()
            assert scheme.sender.version == i + 1
    finally:
        col.shutdown()


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_async_frames_come_from_one_version_that_never_goes_back(mode):
    """MultiAsync starts the next rollout before handing out a batch: a batch may still use the previous version."""
    col, policy, scheme = collector(MultiAsyncCollector, mode)
    try:
        last = {}
        published = 0
        for i, batch in enumerate(col):
            for action, version in frames(batch):
                assert action == float(version), f"a frame tagged version {version} was made by version {action}"
                assert 0 <= version <= published
            worker = int(batch["collector", "traj_ids"].flatten()[0]) if ("collector", "traj_ids") in batch else None
            seen = [v for _, v in frames(batch)]
            assert seen == sorted(seen), f"versions went back within a batch: {seen}"
            if worker is not None:
                assert min(seen) >= last.get(worker, 0)
                last[worker] = max(seen)
            if i == 8:
                break
            published += 1
            set_constant(policy, float(published))
            col.update_policy_weights_()
    finally:
        col.shutdown()


@pytest.mark.parametrize("mode", ["push", "pull"])
def test_a_killed_worker_is_named_by_the_next_update(mode):
    col, policy, scheme = collector(MultiSyncCollector, mode)
    try:
        next(iter(col))
        os.kill(col.procs[1].pid, signal.SIGKILL)
        col.procs[1].join(30)
        set_constant(policy, 5.0)
        t0 = time.monotonic()
        with pytest.raises(ws.ReceiverDiedError) as info:
            col.update_policy_weights_()
        assert info.value.workers == [1] and time.monotonic() - t0 < scheme.timeout
    finally:
        col.shutdown()


def test_shutdown_leaves_no_thread_process_or_shared_segment():
    before_threads = {t.ident for t in threading.enumerate()}
    before_shm = set(os.listdir("/dev/shm"))
    col, policy, scheme = collector(MultiSyncCollector, "push")
    next(iter(col))
    set_constant(policy, 1.0)
    col.update_policy_weights_()
    sender = scheme.sender
    col.shutdown()  # TorchRL 0.14.1 does not call the scheme's shutdown() here
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (not sender.closed or set(_threads()) - before_threads):
        time.sleep(0.05)  # the sender closes itself once every worker is gone
    assert sender.closed, "the trainer's sender outlived the workers"
    assert not set(_threads()) - before_threads, f"threads left: {[t.name for t in threading.enumerate()]}"
    gc.collect()
    assert not [p for p in _children() if "resource_tracker" not in p], f"processes left: {_children()}"
    assert set(os.listdir("/dev/shm")) <= before_shm | {n for n in os.listdir("/dev/shm") if n.startswith("sem.")}
    assert not _memfd_slots(), f"slot buffers still mapped: {_memfd_slots()}"


def _threads():
    return {t.ident: t.name for t in threading.enumerate()}


def _children():
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == os.getpid():
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        out.append(f.read().replace(b"\0", b" ").decode())
            except OSError:
                pass
    return out


def _memfd_slots():
    with open("/proc/self/maps") as f:
        return [line.strip() for line in f if "weightsync-slot" in line]


def test_the_backend_is_registered_by_importing_weightsync_torchrl():
    scheme = WeightSyncScheme.from_backend("weightsync", mode="pull", zero_copy=True)
    assert isinstance(scheme, WeightsyncScheme) and scheme.mode == "pull" and scheme.zero_copy


def test_zero_copy_workers_and_a_policy_factory():
    """Workers build their own policy (factory) and read the trainer's slots in place."""
    policy = make_policy()
    set_constant(policy, 0.0)
    scheme = WeightsyncScheme(zero_copy=True, timeout=30)
    col = MultiSyncCollector([make_env] * 2, policy=policy, policy_factory=make_policy, frames_per_batch=20,
                             total_frames=-1, weight_sync_schemes={"policy": scheme}, track_policy_version=True)
    try:
        for i, batch in enumerate(col):
            assert set(frames(batch)) == {(float(i), i)}
            if i == 3:
                break
            set_constant(policy, float(i + 1))
            col.update_policy_weights_()
    finally:
        col.shutdown()


def test_a_single_process_collector_is_refused_with_what_is_supported():
    """Issue 24: a single-process Collector crashed with AttributeError ('num_workers'); it is refused when
    it is made, naming the collectors the scheme serves."""
    from torchrl.collectors import Collector

    with pytest.raises(ValueError, match="MultiSyncCollector or MultiAsyncCollector"):
        Collector(make_env, policy=make_policy(), frames_per_batch=10, total_frames=-1,
                  weight_sync_schemes={"policy": WeightsyncScheme()})
