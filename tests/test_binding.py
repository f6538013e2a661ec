"""The binding with receivers in this process: versions, modes, subsets, bad input, lifecycle.

Receivers in threads of the test process speak the same protocol over the
same channels and slots as receivers in other processes, at a fraction of the
cost; tests/test_processes.py covers what needs real processes.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from torch import nn

import weightsync as ws

from .conftest import MANIFEST, assert_holds, connect_all
from .workers import pattern


def test_module_with_batchnorm_reaches_module_targets(local):
    """API-1, API-3: parameters and buffers (running stats, int64 counter) arrive bit for bit."""
    torch.manual_seed(0)

    def make():
        return nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))

    model = make()
    targets = [make() for _ in range(2)]
    sender, receivers = local(model, n=2, targets=targets)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(32, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sender.send(timeout=10)  # weights=None re-reads the module (API-2)
    expected = {k: v.detach() for k, v in model.state_dict().items()}
    for r, target in zip(receivers, targets):
        assert_holds(r, expected, 3)
        for name, t in target.state_dict().items():
            assert torch.equal(t, expected[name]), name
        assert all(p.requires_grad for p in target.parameters())
    assert expected["1.num_batches_tracked"].item() == 3


def test_tensordict_weights_and_targets(local):
    """API-1: nested TensorDict keys flatten to dotted names on both sides."""
    td = TensorDict({"policy": {"w": torch.ones(3, 2), "b": torch.zeros(2)}, "scale": torch.tensor(2.0)}, [])
    target = TensorDict({"policy": {"w": torch.empty(3, 2), "b": torch.empty(2)}, "scale": torch.tensor(0.0)}, [])
    sender, (r,) = local(td, n=1, targets=[target])
    assert {e.name for e in sender.manifest} == {"policy.w", "policy.b", "scale"}
    td["policy", "w"] += 1
    sender.send(timeout=10)
    assert torch.equal(target["policy", "w"], torch.full((3, 2), 2.0))
    assert torch.equal(target["scale"], torch.tensor(2.0))
    bad = TensorDict({"policy": {"w": torch.ones(3, 2)}, "policy.w": torch.ones(3, 2)}, [])
    with pytest.raises(ws.WeightsMismatchError, match="duplicate"):
        sender.send(bad, timeout=10)


def test_subset_send_leaves_others_untouched(local, weights):
    """CONS-5, SEND-1: `workers` names its receivers in any order (the suite's subsets are ascending)."""
    sender, receivers = local(weights)
    w1 = pattern(MANIFEST, 1)
    assert sender.send(w1, workers=[2, 0], timeout=10) == 1
    for i in (0, 2):
        assert_holds(receivers[i], w1, 1)
    assert_holds(receivers[1], weights, 0, "CONS-5")


def _bad_inputs():
    good = pattern(MANIFEST, 7)
    missing = dict(good)
    del missing["mask"]
    unknown = dict(good, extra=torch.zeros(1))
    dtype = dict(good, **{"a.bias": good["a.bias"].double()})
    shape = dict(good, **{"a.bias": torch.zeros(9)})
    grad = dict(good, **{"a.bias": torch.zeros(8, requires_grad=True)})
    sparse = dict(good, **{"a.bias": torch.zeros(8).to_sparse()})
    not_tensor = dict(good, **{"a.bias": [0.0] * 8})
    meta = dict(good, **{"a.bias": torch.zeros(8, device="meta")})
    return {
        "missing": (missing, "BAD-1"),
        "unknown": (unknown, "BAD-1"),
        "dtype": (dtype, "BAD-2"),
        "shape": (shape, "BAD-2"),
        "device": (meta, "BAD-2"),
        "sparse": (sparse, "BAD-2"),
        "not_tensor": (not_tensor, "BAD-2"),
        "requires_grad": (grad, "BAD-3"),
    }


@pytest.mark.parametrize("kind", list(_bad_inputs()))
def test_bad_weights_change_nothing(local, weights, kind):
    """BAD-1..BAD-4, VER-2: rejected before any shared byte changes; no version consumed."""
    bad, req = _bad_inputs()[kind]
    sender, receivers = local(weights, n=2)
    with pytest.raises(ws.WeightsMismatchError, match=req) as info:
        sender.send(bad, timeout=10)
    assert isinstance(info.value, ValueError)
    assert sender.version == 0, "VER-2 violated"
    for r in receivers:
        assert_holds(r, weights, 0, "BAD-4")
    assert sender.send(pattern(MANIFEST, 1), timeout=10) == 1, "VER-2: the next good send is version 1"


@pytest.mark.parametrize("workers", [[], [0, 0], [3], [-1], ["0"], [True]])
def test_invalid_workers_rejected(local, weights, workers):
    """SEND-6, VER-2."""
    sender, _ = local(weights)
    with pytest.raises(ValueError, match="SEND-6"):
        sender.send(workers=workers, timeout=5)
    assert sender.version == 0


def test_pull_applies_only_in_poll_and_takes_the_newest(local, weights):
    """CONS-3, ACK-1, ACK-2, SEND-5."""
    sender, (r,) = local(weights, n=1, modes="pull")
    futures = [sender.send_async(pattern(MANIFEST, v)) for v in (1, 2, 3)]
    assert [f.version for f in futures] == [1, 2, 3]
    time.sleep(0.05)
    assert r.version == 0, "CONS-3 violated: pull receiver applied outside poll()"
    assert r.poll(timeout=5) == 3, "ACK-2: the newest pending version is applied"
    for f in futures:
        assert f.wait(timeout=5) == f.version
        assert f.done()
    assert_holds(r, pattern(MANIFEST, 3), 3)
    assert r.poll() is None


def test_pull_poll_takes_the_newest_when_versions_bring_new_slots(local, weights):
    """ACK-2: a frame that carries slot handles ends a socket read; the frames queued behind it still count.

    A zero-copy pull receiver keeps its slots, so versions 2 and 3 each bring a new slot's handle.
    """
    sender, (r,) = local(weights, n=1, modes="pull", zero_copy=True, max_slots=8)
    with pytest.raises(ws.SyncTimeoutError):
        sender.send(pattern(MANIFEST, 1), timeout=0.2)
    futures = [sender.send_async(pattern(MANIFEST, 2), workers=[0]), sender.send_async(pattern(MANIFEST, 3))]
    time.sleep(0.05)
    assert r.poll(timeout=5) == 3, "ACK-2 violated: poll() applied an older pending version"
    for f in futures:
        assert f.wait(timeout=5) == f.version
    assert_holds(r, pattern(MANIFEST, 3), 3)


def test_wait_can_be_called_again_after_timeout(local, weights):
    """SEND-2, SEND-5, VER-4: a late ack completes the wait, and is not taken for the next one."""
    sender, (r,) = local(weights, n=1, modes="pull")
    t0 = time.monotonic()
    with pytest.raises(ws.SyncTimeoutError) as info:
        sender.send(pattern(MANIFEST, 1), timeout=0.3)
    assert time.monotonic() - t0 < 10  # SEND-2: 0.3 s and the grace; far from them, for a busy machine
    assert info.value.workers == [0] and info.value.version == 1
    assert isinstance(info.value, TimeoutError)
    assert sender.version == 1, "a published version stays consumed"
    fut = sender.send_async(pattern(MANIFEST, 2))
    with pytest.raises(ws.SyncTimeoutError):
        fut.wait(timeout=0.1)
    assert r.poll(timeout=5) == 2
    assert fut.wait(timeout=5) == 2


def test_reading_keeps_updates_out(local, weights):
    """CONS-2: an apply waits for open reading() blocks; nested reading() in one thread works."""
    sender, (r,) = local(weights, n=1)
    with r.reading():
        with r.reading():
            fut = sender.send_async(pattern(MANIFEST, 1))
            with pytest.raises(ws.SyncTimeoutError):
                fut.wait(timeout=0.3)
            assert_holds(r, weights, 0, "CONS-2")
    assert fut.wait(timeout=5) == 1
    assert_holds(r, pattern(MANIFEST, 1), 1)


def test_poll_inside_reading_raises(local, weights):
    """CONS-3."""
    _, (r,) = local(weights, n=1, modes="pull")
    with r.reading():
        with pytest.raises(ws.ProtocolError, match="CONS-1"):
            r.poll()


def test_poll_in_push_mode_raises(local, weights):
    """API-3: poll() belongs to pull mode."""
    _, (r,) = local(weights, n=1)
    with pytest.raises(ws.ProtocolError):
        r.poll()


class FlakyTarget(dict):
    """A target mapping that fails on demand, as a receiver's apply can."""

    fail = False

    def items(self):
        if self.fail:
            raise RuntimeError("target unavailable")
        return super().items()


def test_receiver_error_is_reported_with_worker_and_version(local, weights):
    """ACK-6, SEND-2: the send names the receiver, the version and the receiver's detail."""
    flaky = FlakyTarget({k: torch.empty_like(v) for k, v in weights.items()})
    sender, receivers = local(weights, n=2, targets=[None, flaky])
    flaky.fail = True
    with pytest.raises(ws.ReceiverError) as info:
        sender.send(pattern(MANIFEST, 1), timeout=10)
    err = info.value
    assert err.workers == [1] and err.version == 1
    assert "target unavailable" in err.details[1]
    assert receivers[1].version is None, "ACK-6: a failed apply leaves no version"
    assert_holds(receivers[0], pattern(MANIFEST, 1), 1)
    flaky.fail = False
    assert sender.send(pattern(MANIFEST, 2), timeout=10) == 2
    assert_holds(receivers[1], pattern(MANIFEST, 2), 2)


def test_pull_receiver_error_raises_in_poll(local, weights):
    """ACK-6: a pull receiver sees its own failure too."""
    flaky = FlakyTarget({k: torch.empty_like(v) for k, v in weights.items()})
    sender, (r,) = local(weights, n=1, modes="pull", targets=[flaky])
    flaky.fail = True
    fut = sender.send_async(pattern(MANIFEST, 1))
    with pytest.raises(ws.ReceiverError):
        r.poll(timeout=5)
    with pytest.raises(ws.ReceiverError) as info:
        fut.wait(timeout=5)
    assert info.value.workers == [0]


def test_closed_receiver_is_detected_without_timeout(local, weights):
    """SEND-3: a send given no timeout at all still learns of a closed receiver from its end of channel
    (the suite's sends to a gone receiver all pass a finite timeout)."""
    sender, receivers = local(weights, n=2)
    receivers[1].close()
    t0 = time.monotonic()
    with pytest.raises(ws.ReceiverDiedError) as info:
        sender.send(pattern(MANIFEST, 1))  # no timeout: detection must not need one
    assert time.monotonic() - t0 < 5
    assert info.value.workers == [1]


def test_handle_of_a_live_receiver_cites_life_3(local, weights):
    """LIFE-3: the refusal's message cites its requirement (10.3); the refusal itself is the suite's."""
    sender, _ = local(weights, n=1)
    with pytest.raises(ws.ProtocolError, match="LIFE-3"):
        sender.handle(0)


def test_consumed_handle_cannot_travel(local, weights):
    """LIFE-2: a handle used by connect cannot be pickled by multiprocessing's own pickler, the one that
    carries it to a Process (the suite tries plain pickle.dumps)."""
    from multiprocessing.reduction import ForkingPickler

    sender, _ = local(weights, n=1)
    with pytest.raises(ws.ProtocolError, match="LIFE-2"):
        ForkingPickler.dumps(sender._hub.peers[0].handle)


def test_target_mismatch_fails_both_connects(weights):
    """INIT-3, SEND-4: the receiver raises WeightsMismatchError, the sender names it."""
    sender = ws.Sender(weights, 2)
    wrong = {k: torch.empty_like(v) for k, v in weights.items()}
    wrong["a.weight"] = torch.empty(4, 8)
    good = ws.Receiver(sender.handle(0))
    bad = ws.Receiver(sender.handle(1), wrong)
    errors = {}

    def connect(r):
        try:
            r.connect(timeout=10)
        except ws.WeightSyncError as e:
            errors[r.id] = e

    threads = [threading.Thread(target=connect, args=(r,)) for r in (good, bad)]
    for t in threads:
        t.start()
    try:
        with pytest.raises(ws.ReceiverError) as info:
            sender.connect(timeout=10)
        for t in threads:
            t.join(timeout=10)
        assert info.value.workers == [1] and "a.weight" in info.value.details[1]
        assert isinstance(errors[1], ws.WeightsMismatchError) and 0 not in errors
        with pytest.raises(ws.ReceiverError):
            sender.send(timeout=5)
        assert sender.version == 0
        assert sender.send(workers=[0], timeout=5) == 1
    finally:
        sender.close()
        good.close()
        bad.close()


def test_connect_timeouts_and_dead_handles(weights):
    """INIT-5: a silent receiver times out, a handle that reached no process fails at once."""
    sender = ws.Sender(weights, 2)
    silent = ws.Receiver(sender.handle(0))
    sender.handle(1)  # never given to anyone
    try:
        t0 = time.monotonic()
        with pytest.raises(ws.ReceiverDiedError) as died:
            sender.connect(timeout=0.5, workers=[1])
        assert died.value.workers == [1] and time.monotonic() - t0 < 5
        with pytest.raises(ws.SyncTimeoutError) as slow:
            sender.connect(timeout=0.3, workers=[0])
        assert slow.value.workers == [0]
    finally:
        sender.close()
        silent.close()
    r = ws.Receiver(ws.Sender(weights, 1).handle(0))
    with pytest.raises(ws.ClosedError):
        r.connect(timeout=5)  # its sender was collected: end of channel
    r.close()


def test_close_with_a_version_pending_stops_receivers(local, weights):
    """LIFE-7, SM-R-3: sender.close() with a version still pending at a push and a pull receiver.

    The suite closes with nothing pending, and checks the rest of close (twice, and what closed objects refuse).
    """
    sender, receivers = local(weights, n=2, modes=["push", "pull"])
    sender.send_async(pattern(MANIFEST, 1))  # left pending on purpose
    sender.close()
    push, pull = receivers
    deadline = time.monotonic() + 5
    while not push.stopped and time.monotonic() < deadline:
        time.sleep(0.01)
    assert push.stopped, "LIFE-7: push receiver did not see Stop"
    assert pull.poll(timeout=1) in (None, 1)
    assert pull.poll(timeout=0.1) is None and pull.stopped
    assert push.weights["a.weight"].shape == (8, 4), "weights stay readable after Stop"
    for r in receivers:
        r.close()
        assert r.closed


def test_fork_context_is_rejected(weights):
    """CON-2."""
    import multiprocessing

    with pytest.raises(ValueError, match="CON-2"):
        ws.Sender(weights, 1, ctx=multiprocessing.get_context("fork"))


def test_zero_copy_receivers_hold_their_slot(local, weights):
    """ZC-1, ZC-2, SLOT-2, SLOT-3: subset sends never overwrite a slot a zero-copy receiver reads."""
    sender, receivers = local(weights, n=3, zero_copy=True)
    expected = {0: (0, weights), 1: (0, weights), 2: (0, weights)}
    plan = [[0], [1], [0], [2], [0, 1], [1], [2], [0]]
    for step_no, targets in enumerate(plan, start=1):
        w = pattern(MANIFEST, step_no)
        assert sender.send(w, workers=targets, timeout=10) == step_no
        for i in targets:
            expected[i] = (step_no, w)
        for r in receivers:
            version, exp = expected[r.id]
            assert_holds(r, exp, version, "ZC-2")


def test_zero_copy_module_target_rebinds_parameters(local):
    """ZC-1: a module target's parameters become views of the slot, keeping their identity."""
    model = nn.Linear(3, 2)
    target = nn.Linear(3, 2)
    param = target.weight
    sender, (r,) = local(model, n=1, targets=[target], zero_copy=True)
    with torch.no_grad():
        model.weight.add_(1)
    sender.send(timeout=10)
    assert target.weight is param
    assert torch.equal(target.weight, model.weight)
    assert target(torch.ones(1, 3)).shape == (1, 2)


def test_zero_copy_rejects_mapping_targets(weights):
    """ZC-1."""
    with ws.Sender(weights, 1) as sender:
        with pytest.raises(ValueError, match="ZC-1"):
            ws.Receiver(sender.handle(0), dict(weights), zero_copy=True)


def test_async_sends_beyond_free_slots_wait_then_time_out(local, weights):
    """SLOT-3, VER-2: at max_slots the send waits for acks, then fails having published nothing."""
    sender, (r,) = local(weights, n=1, modes="pull", max_slots=2)
    f1 = sender.send_async(pattern(MANIFEST, 1))
    f2 = sender.send_async(pattern(MANIFEST, 2))
    with pytest.raises(ws.SyncTimeoutError, match="SLOT-3") as info:
        sender.send_async(pattern(MANIFEST, 3), timeout=0.2)
    assert info.value.workers == [0]
    assert sender.version == 2, "VER-2 violated: a send that found no slot consumed a version"
    assert r.poll(timeout=5) == 2
    assert f1.wait(timeout=5) == 1 and f2.wait(timeout=5) == 2
    f3 = sender.send_async(pattern(MANIFEST, 3), timeout=1)
    assert f3.version == 3


def test_sender_file_descriptors_do_not_grow_with_tensors():
    """LAYOUT-2, LIFE-4: 500 tensors and 4 receivers cost a handful of descriptors, all released."""
    from conformance.probes import new_fds, open_fds

    many = {f"layer{i}.weight": torch.randn(40) for i in range(500)}
    before = open_fds()
    sender = ws.Sender(many, 4)
    handles = [sender.handle(i) for i in range(4)]
    held = len(new_fds(before))
    assert held <= 20, f"LAYOUT-2 violated: {held} descriptors for 500 tensors"
    receivers = [ws.Receiver(h) for h in handles]
    connect_all(sender, receivers)
    sender.send(timeout=10)
    sender.close()
    for r in receivers:
        r.close()
    assert new_fds(before) == {}, "LIFE-4/LIFE-5: descriptors left after close"


def test_threads_are_released(local, weights):
    """LIFE-5: close() stops each push receiver's apply thread."""
    from .conftest import thread_names

    before = thread_names()
    sender, receivers = local(weights, n=2)
    assert any(n.startswith("weightsync-receiver") for n in thread_names())
    sender.close()
    for r in receivers:
        r.close()
    assert thread_names() == before


def test_zero_copy_weights_stay_readable_after_close(tmp_path):
    """LIFE-5, LIFE-6, ZC-1: close() must not unmap memory that zero-copy weights still view.

    Run in a child interpreter: the bug this guards against is a segfault.
    """
    import subprocess
    import sys

    script = tmp_path / "zc_close.py"
    script.write_text(
        "import torch, weightsync as ws\n"
        "from tests.conftest import connect_all\n"
        "from torch import nn\n"
        "s = ws.Sender({'w': torch.arange(1000.)}, 2)\n"
        "plain = ws.Receiver(s.handle(0), zero_copy=True)\n"
        "mod = nn.Module(); mod.register_buffer('w', torch.zeros(1000))\n"
        "bound = ws.Receiver(s.handle(1), mod, zero_copy=True)\n"
        "connect_all(s, [plain, bound])\n"
        "w = plain.weights['w']\n"
        "plain.close(); bound.close(); s.close()\n"
        "print(float(w.sum()), float(mod.w.sum()))\n"
    )
    root = str(Path(__file__).parent.parent)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=root,
                         env={**os.environ, "PYTHONPATH": root})
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-2000:]}"
    assert out.stdout.split() == ["499500.0", "499500.0"]


def test_connect_names_a_gone_receiver_without_waiting_for_the_others(weights):
    """INIT-5, SEND-2: a failure known early is raised early: after SEND-7's one-second window, long before the
    timeout (a bound far from both, so that a busy machine does not fail it)."""
    sender = ws.Sender(weights, 2)
    silent = ws.Receiver(sender.handle(1))
    sender.handle(0)  # reaches no process: gone at once
    try:
        t0 = time.monotonic()
        with pytest.raises(ws.ReceiverDiedError) as info:
            sender.connect(timeout=30)
        assert info.value.workers == [0]
        assert time.monotonic() - t0 < 15
    finally:
        sender.close()
        silent.close()


def test_workers_that_are_not_a_list_of_ids(local, weights):
    """SEND-6: any malformed workers argument is a ValueError."""
    sender, _ = local(weights, n=1)
    for workers in (0, "0", 1.5):
        with pytest.raises(ValueError, match="SEND-6"):
            sender.send(workers=workers, timeout=5)
    assert sender.version == 0


def test_import_weightsync_adds_nothing_heavy_to_import_torch():
    """Issue 24: a worker's `import weightsync` costs about what `import torch` costs. tensordict (which pulls
    torch._dynamo) comes only with a TensorDict the caller made; what weightsync adds is its own modules and
    the codec's."""
    import subprocess
    import sys

    code = ("import sys, torch; before = set(sys.modules); import weightsync; "
            "print(' '.join(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    added = {m.split(".")[0] for m in out.stdout.split()} - {"weightsync"}
    assert not added & {"tensordict", "torchrl", "numpy"}, added
    assert not {m for m in out.stdout.split() if m.startswith(("torch._dynamo", "torch.distributed"))}, out.stdout
    light = {"msgpack", "hmac", "secrets", "cython_runtime", "_hashlib", "hashlib", "base64", "binascii"}
    assert {m for m in added - light if not m.startswith("_cython")} == set(), added


def test_slot_bound_defaults_and_limits():
    """SLOT-3 (issue 24): N+2 slots per device for a small model, 3 for one above 1 GiB whatever N, and
    max_slot_bytes lowers either; fewer than the two slots of SLOT-1 is refused."""
    from weightsync import limits
    from weightsync.slots import slot_bound

    small, large = 100 << 20, (1 << 30) + 4096
    assert slot_bound(small, 3, None, None) == 5
    assert [slot_bound(large, n, None, None) for n in (1, 2, 8, 64)] == [3, 3, 3, 3]
    assert slot_bound(large, 8, None, None) * large <= limits.LARGE_SLOT_COPIES * large  # the 8-worker 1 GiB case
    assert slot_bound(large, 8, 6, None) == 6  # an explicit max_slots is the caller's
    assert slot_bound(small, 8, None, 4 * small + 1) == 4
    assert slot_bound(small, 8, 3, 10 * small) == 3
    for max_slots, max_bytes in ((1, None), (None, 2 * small - 1), (None, 0), (True, None), (None, 2.5 * small)):
        with pytest.raises(ValueError, match="SLOT-1"):
            slot_bound(small, 8, max_slots, max_bytes)


def test_max_slot_bytes_bounds_what_a_send_may_allocate(local):
    """SLOT-3 with max_slot_bytes: a pull receiver that does not poll pins one slot and the latest another; with
    room for two slots the next send waits and raises SyncTimeoutError naming it, publishing nothing, where the
    default bound (N+2) would allocate a third slot."""
    for bound, third in ((2 * 4096, False), (None, True)):  # one slot holds 4,096 bytes
        sender, (r,) = local({"w": torch.zeros(1024)}, 1, modes="pull",
                             **({} if bound is None else {"max_slot_bytes": bound}))
        for v in (1, 2):
            assert sender.send_async({"w": torch.full((1024,), float(v))}, timeout=1).version == v
        if third:
            assert sender.send_async({"w": torch.full((1024,), 3.0)}, timeout=1).version == 3
            assert r.poll(5) == 3
            continue
        with pytest.raises(ws.SyncTimeoutError) as e:
            sender.send_async({"w": torch.full((1024,), 3.0)}, timeout=0.2)
        assert e.value.workers == [0] and e.value.version is None and sender.version == 2, e.value
        assert r.poll(5) == 2  # the newest pending version; its slots are free again (ACK-2)
        assert sender.send_async({"w": torch.full((1024,), 3.0)}, timeout=5).version == 3


@pytest.mark.slow
def test_a_sender_of_more_than_a_gib_holds_three_slots_whatever_its_receivers(local):
    """SLOT-3.e, the reference's own rule, with real weights just over 1 GiB (about 4 GiB in all: the weights and
    three slots): four zero-copy pull receivers that never poll pin the slot of the version they hold and of each
    one sent them. The default bound would be N+2 = 6; above 1 GiB it is 3, so the sends of 1 and 2 fill the
    three slots and the send of 3 waits its timeout and fails naming all four, publishing nothing. Once they
    poll, the next send goes through."""
    from weightsync import limits

    weights = {"w": torch.zeros((limits.LARGE_SLOT + 4096) // 4)}
    sender, receivers = local(weights, 4, modes="pull", zero_copy=True)
    for v in (1, 2):
        assert sender.send_async(timeout=60).version == v
    with pytest.raises(ws.SyncTimeoutError) as e:
        sender.send_async(timeout=1)
    assert e.value.version is None and sorted(e.value.workers) == [0, 1, 2, 3] and sender.version == 2, e.value
    assert len(sender._hub.pool.groups[torch.device("cpu")].slots) == 3
    for r in receivers:
        assert r.poll(60) == 2
    assert sender.send_async(timeout=60).version == 3


def test_cast_slots_from_packed_weights_and_bad_dtypes(local):
    """LAYOUT-3 in the reference: packed fp32 weights reach a bf16 receiver rounded (the packed buffer's one copy
    does not apply to a slot of another dtype); a dtype that is not floating, or a list of the wrong length,
    is refused naming LAYOUT-3; asking for the weights' own dtype makes no second group."""

    # 16 bytes of fp32 and 8 of bf16 both take one 64-byte place: the slots are the same size, so only the
    # layout's dtype tells a raw copy of the packed buffer from a cast
    trainer = ws.pack({"a": torch.zeros(4), "b": torch.zeros(4)})
    target = {"a": torch.zeros(4, dtype=torch.bfloat16), "b": torch.zeros(4, dtype=torch.bfloat16)}
    sender, (r,) = local(trainer, 1, targets=[target], dtypes=torch.bfloat16)
    with torch.no_grad():
        trainer["a"].copy_(torch.randn(4) * 1000)
        trainer["b"].copy_(torch.randn(4))
    sender.send(timeout=10)
    for name in ("a", "b"):
        assert torch.equal(target[name], trainer[name].detach().bfloat16()), name
    for bad in (torch.int32, [torch.bfloat16, None]):
        with pytest.raises(ValueError, match="LAYOUT-3"):
            ws.Sender({"w": torch.zeros(4)}, 1, dtypes=bad)
    with ws.Sender({"w": torch.zeros(4)}, 2, dtypes=torch.float32) as same:
        assert list(same._hub.pool.groups) == [torch.device("cpu")]


def test_sender_close_is_bounded_as_a_whole_not_wait_by_wait(weights, monkeypatch):
    """LIFE-4/LIFE-9: close() waits for a lock a call left held, then for the listener thread to end; each wait
    had its own bound, so together they could pass the reaction bound. Scaled down here: a lock nobody releases
    and a listener thread that does not end must still leave close() within REACTION_BOUND."""
    from weightsync import helper, limits

    monkeypatch.setattr(limits, "REACTION_BOUND", 1.0)
    monkeypatch.setattr(helper, "CLOSE_LOCK_WAIT", 0.4)
    s = ws.Sender(weights, 1)
    stuck = threading.Event()
    s._hub.mu.acquire()  # as a call interrupted by Ctrl-C leaves it
    s._hub.helper = threading.Thread(target=stuck.wait, args=(30,), daemon=True)
    s._hub.helper.start()
    try:
        t0 = time.monotonic()
        s.close()
        took = time.monotonic() - t0
    finally:
        stuck.set()
    assert took <= limits.REACTION_BOUND, f"close() took {took:.2f} s, past the reaction bound of 1 s (LIFE-9)"


def test_a_network_receiver_close_shares_one_bound_between_its_threads(monkeypatch):
    """LIFE-5: receiver.close() returns within the reaction bound. A TCP receiver also ends its I/O thread and its
    data plane's thread; each join had a bound of its own (10 s + 1 s beside the apply thread's 5 s). Scaled down:
    with an I/O thread that does not end, close(bound) of the pending source keeps to the bound it is given."""
    from weightsync.clock import Deadline
    from weightsync.pending import NetworkPending

    stuck = threading.Event()
    source = NetworkPending.__new__(NetworkPending)
    source._cond, source._net, source._settled = threading.Condition(), None, threading.Event()
    source._io_thread = threading.Thread(target=stuck.wait, args=(30,), daemon=True)
    source._io_thread.start()
    try:
        t0 = time.monotonic()
        source.close(Deadline(0.3))
        took = time.monotonic() - t0
    finally:
        stuck.set()
    assert took < 0.3 + 0.2, f"close() of a network receiver's source took {took:.2f} s against a 0.3 s bound"


def test_a_receive_that_cannot_be_written_fails_its_target_at_once(local, weights):
    """SEND-3, SEND-2: a target whose channel refuses the Receive (the peer reset it between the send's look at
    the channels and its write) is gone, and the send names it at once: the version's future, made once the
    Receives are out, takes in what their writes settled."""

    class Refusing:
        def __init__(self, sock):
            self._sock = sock

        def send(self, data, *args):
            raise BrokenPipeError(32, "Broken pipe")

        def __getattr__(self, name):
            return getattr(self._sock, name)

    sender, (r0, r1) = local(weights, n=2)
    channel = sender._hub.peers[1].channel
    channel.sock = Refusing(channel.sock)
    started = time.monotonic()
    with pytest.raises(ws.ReceiverDiedError) as e:
        sender.send(timeout=20)
    assert time.monotonic() - started < 5, "the failed write settled nothing: the send waited for an answer"
    assert e.value.workers == [1] and e.value.version == 1
    assert r0.version == 1


def test_an_outcome_decided_after_the_awaiting_loop_closed_is_dropped_quietly(local, weights, caplog):
    """API-11: an await that asyncio.wait_for cancelled, on a loop asyncio.run() has closed since; the sender's
    close() then decides the future, and telling the closed loop is skipped, not logged as a callback's error."""
    import asyncio

    sender, (r,) = local(weights, n=1, modes="pull")
    f = sender.send_async(timeout=5)

    async def main():
        with pytest.raises((TimeoutError, asyncio.TimeoutError)):  # noqa: UP041 - two classes before Python 3.11
            await asyncio.wait_for(f, 0.2)

    asyncio.run(main())
    caplog.clear()
    sender.close()
    told = threading.Event()
    f.add_done_callback(lambda _: told.set())  # after the await's own: the callbacks run in order (API-11)
    assert told.wait(5)
    assert not [rec for rec in caplog.records if rec.levelname == "ERROR"], caplog.text


def test_a_violation_poll_raised_is_raised_once():
    """SM-R-7: a pull receiver's poll() raises its sender's violation; the receiver is stopped, and the next poll()
    returns None instead of raising the same error again (the fix of the twelfth round's SM-R-7 bug once did)."""
    import random

    from conformance.peers import ScriptedSender, init, layout, slotinfo

    sender = ScriptedSender()
    receiver = ws.Receiver(sender.url(0), mode="pull")
    try:
        out: dict = {}
        t = threading.Thread(target=lambda: out.setdefault("v", receiver.connect(10)), daemon=True)
        t.start()
        session = sender.accept(10)
        manifest, data, nbytes = layout([("w", "float32", (4, 8), random.Random(0).randbytes(128))])
        session.send(init(0, manifest, [slotinfo(0, nbytes)], 0, 0), fds=[sender.slot(0, data, nbytes)])
        t.join(10)
        assert out == {"v": 0}
        session.send({"type": "Rewind", "version": 1, "slot": 0})
        with pytest.raises(ws.RemoteProtocolError):
            receiver.poll(5.0)
        assert receiver.stopped
        assert receiver.poll(0.5) is None
    finally:
        receiver.close()
        sender.close()
