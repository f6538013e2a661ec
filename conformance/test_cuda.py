"""Spec section 11, CUDA buffers (CUDA-*), for implementations that declare `cuda`.

These tests also need a CUDA device on the machine that runs the suite; without
one they are skipped with that reason.
"""

import threading

import pytest
import torch

from . import strategies as S
from . import timing as tm
from .model import describe
from .rig import Rig, expect_error

pytestmark = [pytest.mark.needs("cuda", "push")]


@pytest.fixture(autouse=True)
def _device():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine")


def basic(seed=0, device="cpu"):
    return {n: t.to(device) for n, t in S.distinct_weights(S.BASIC_SPEC, seed).items()}


@pytest.mark.req("CUDA-1", "ACK-3")
@pytest.mark.parametrize("source", ["cpu", "cuda:0"])
def test_each_receiver_reads_from_its_slot_device(rigs, source):
    rig = rigs(basic(0, source), 2, devices=["cuda:0", "cpu"], targets=None)
    for i, want in enumerate(["cuda", "cpu"]):
        devs = set(rig.workers[i].call("devices").values())
        assert {d.split(":")[0] for d in devs} == {want}, f"CUDA-1 violated: receiver {i} reads from {devs}, not {want}"
    for k in range(1, 4):
        rig.send(basic(k, source))
        rig.check()


@pytest.mark.req("CUDA-2", "CUDA-3", "CONS-1")
def test_no_incomplete_version_is_seen_on_the_device(rigs):
    spec = [("big", torch.float32, (1024, 1024)), ("n", torch.int64, ())]
    rig = rigs({n: t.cuda() for n, t in S.distinct_weights(spec, 0).items()}, 2, devices=["cuda:0"] * 2, targets=None)
    for w in rig.workers:
        w.call("reader_start")
    for k in range(1, 16):
        rig.send({n: t.cuda() for n, t in S.distinct_weights(spec, k).items()})
    for i, w in enumerate(rig.workers):
        obs = w.call("reader_stop")
        assert not obs["errors"], f"CUDA-2 violated: receiver {i}'s reader saw {obs['errors'][:2]}"
        for (v, d), _ in obs["observed"]:
            assert d == rig.model.digests[v], f"CUDA-2 violated: receiver {i} saw version {v} with incomplete bytes"
    rig.check()


@pytest.mark.req("CUDA-4", "SEND-3")
def test_dead_receiver_and_close_release_device_memory(ws, pool, capfd):
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    rig = Rig(ws, pool, basic(0, "cuda:0"), 2, devices=["cuda:0"] * 2, targets=None)
    rig.send(basic(1, "cuda:0"))
    rig.workers[1].kill()
    expect_error(ws, "ReceiverDiedError", rig.sender.send, basic(2, "cuda:0"), timeout=tm.T, ids="CUDA-4",
                 what="send after a CUDA receiver was killed", naming=[1], limit=tm.T)
    rig.sender.close()
    rig.workers[0].call("discard")
    del rig
    torch.cuda.synchronize()
    after = torch.cuda.memory_allocated()
    assert after <= before, f"CUDA-4 violated: {after - before} bytes of device memory left after close()"
    out, err = capfd.readouterr()
    assert "IPC" not in out + err, f"CUDA-4 violated: CUDA IPC warnings at shutdown: {(out + err)[:300]}"


@pytest.mark.req("CUDA-5")
def test_receiver_in_the_senders_process(ws):
    with ws.Sender(basic(0, "cuda:0"), 1, devices=["cuda:0"]) as s:
        h = s.handle(0)
        box = {}

        def run():
            try:
                r = ws.Receiver(h)
                box["version"] = r.connect(tm.T)
                box["receiver"] = r
            except Exception as e:  # noqa: BLE001
                box["error"] = e

        t = threading.Thread(target=run, daemon=True)
        t.start()
        s.connect(tm.T)
        t.join(tm.T)
        assert "error" not in box, f"CUDA-5 violated: a receiver in the sender's process failed: {box['error']!r}"
        r = box["receiver"]
        s.send(basic(1, "cuda:0"), timeout=tm.T)
        with r.reading():
            got = describe(r.weights)
        assert got == describe(basic(1)), "CUDA-5 violated: an in-process receiver does not hold the version sent"
        r.close()
