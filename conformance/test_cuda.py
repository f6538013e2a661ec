"""Spec section 11, CUDA buffers (CUDA-*), for implementations that declare `cuda`.

These tests also need a CUDA device on the machine that runs the suite; without
one they are skipped with that reason.
"""

import importlib
import os
import threading
import time
import traceback

import pytest
import torch
import torch.multiprocessing as mp

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


def in_process(ws, sender, **options):
    """A receiver of `sender` in this process, connected from a thread (CUDA-5).

    The receiver is made before sender.connect(): in one process the handle is the
    sender's own copy of the receiver's end, which connect() closes.
    """
    r = ws.Receiver(sender.handle(0), **options)
    box = {}

    def run():
        try:
            box["version"] = r.connect(tm.T)
        except Exception as e:  # noqa: BLE001
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        sender.connect(tm.T)
    finally:  # the receiver's own error says more than the sender's view of it
        t.join(tm.T)
        if "error" in box:
            e = box["error"]
            tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))[-2500:]
            raise AssertionError(f"CUDA-5 violated: a receiver in the sender's process failed: {e!r}\n{tb}")
    return r


#: GPU time a reader's kernel keeps its stream busy (about 0.15 s on an H100): far longer than an apply.
SLEEP_CYCLES = 300_000_000


@pytest.mark.req("CUDA-6", "CUDA-3")
@pytest.mark.parametrize("zero_copy", [False, pytest.param(True, marks=pytest.mark.needs("zero_copy"))],
                         ids=["copy", "zero-copy"])
def test_no_apply_overtakes_gpu_work_queued_inside_reading(ws, zero_copy):
    """A kernel queued inside reading() still reads version 0 when the block ends; what it reads
    must still be version 0 however many versions follow (the weights come from the CPU, so
    that the sender's own stream ordering cannot hide the receiver's)."""
    n = 1 << 20
    with ws.Sender({"w": torch.zeros(n)}, 1, devices=["cuda:0"]) as s:
        r = in_process(ws, s, zero_copy=zero_copy)
        try:
            with r.reading():
                torch.cuda._sleep(SLEEP_CYCLES)
                snapshot = r.weights["w"].clone()  # queued behind the sleep
            for v in range(1, 4):  # zero-copy: version 0's slot is released and rewritten by one of these
                s.send({"w": torch.full((n,), float(v))}, timeout=tm.T)
            torch.cuda.synchronize()
            changed = int((snapshot != 0).sum())
            rule = "CUDA-3" if zero_copy else "CUDA-6"
            assert changed == 0, (f"{rule} violated: a kernel queued inside reading() read {changed} elements of a "
                                  "later version: the apply (or the sender's rewrite of a released slot) overtook it")
        finally:
            r.close()


def _receive_in_child(impl: str, handle, q) -> None:
    """A spawned receiver that reports the version it holds, a digest of its weights and their devices."""
    try:
        ws = importlib.import_module(impl)
        with ws.Receiver(handle) as r:
            r.connect(tm.T)
            deadline = time.monotonic() + tm.T
            while r.version != 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            with r.reading():
                q.put((r.version, describe(r.weights), sorted({str(t.device) for t in r.weights.values()})))
    except Exception as e:  # noqa: BLE001 - the test reports it
        q.put(f"{type(e).__name__}: {e}")


@pytest.mark.req("CUDA-7", "CUDA-1")
def test_a_receiver_finds_the_slot_device_by_uuid(ws):
    """The receiver sees the sender's GPU (the last one) as its only device, named by UUID: it is
    cuda:0 there. With one GPU the indices agree anyway; with two or more, a receiver that
    maps by the sender's index fails or reads another GPU."""
    last = torch.cuda.device_count() - 1
    device = f"cuda:{last}"
    ctx = mp.get_context("spawn")
    with ws.Sender(basic(0, device), 1, devices=[device]) as s:
        q = ctx.Queue()
        before = os.environ.get("CUDA_VISIBLE_DEVICES")
        os.environ["CUDA_VISIBLE_DEVICES"] = f"GPU-{torch.cuda.get_device_properties(last).uuid}"
        try:
            p = ctx.Process(target=_receive_in_child, args=(ws.__name__, s.handle(0), q), daemon=True)
            p.start()
        finally:
            if before is None:
                del os.environ["CUDA_VISIBLE_DEVICES"]
            else:
                os.environ["CUDA_VISIBLE_DEVICES"] = before
        try:
            s.connect(tm.T)
            s.send(basic(1, device), timeout=tm.T)
            got = q.get(timeout=tm.T)
        finally:
            s.close()
            p.join(tm.T)
            if p.is_alive():
                p.kill()
    assert not isinstance(got, str), f"CUDA-7 violated: a receiver that sees the GPU by UUID failed: {got}"
    version, digest, devices = got
    assert devices == ["cuda:0"], f"CUDA-7 violated: the receiver's weights are on {devices}, not its cuda:0"
    assert version == 1 and digest == describe(basic(1)), "CUDA-7 violated: the receiver does not hold version 1"


@pytest.mark.req("CUDA-5")
def test_receiver_in_the_senders_process(ws):
    with ws.Sender(basic(0, "cuda:0"), 1, devices=["cuda:0"]) as s:
        r = in_process(ws, s)
        s.send(basic(1, "cuda:0"), timeout=tm.T)
        with r.reading():
            got = describe(r.weights)
        assert got == describe(basic(1)), "CUDA-5 violated: an in-process receiver does not hold the version sent"
        r.close()


# ---- the network profile with weights on GPUs (NET-7) ----


def _bytes(t: torch.Tensor) -> bytes:
    return t.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes()


@pytest.mark.req("NET-7", "NET-1")
@pytest.mark.needs("network", "rendezvous")
def test_a_gpu_trainers_init_over_tcp_names_host_memory(ws):
    """NET-7: a sender whose weights are on a GPU gives a receiver that joins over TCP an Init whose manifest names
    the CPU for every entry: the network carries host memory."""
    from .peers import Joiner

    with ws.Sender(basic(0, "cuda:0"), 1, listen="tcp://127.0.0.1:0") as sender:
        joiner = Joiner(sender.url(0))
        try:
            assert joiner.join().get("type") == "Welcome", "RDV-3: the URL's own secret was refused"
            t = threading.Thread(target=lambda: _connect_quietly(sender), daemon=True)
            t.start()
            init = joiner.handshake(answer=False, bound=tm.T)
            devices = {e["name"]: e["device"] for e in init["manifest"]}
            assert set(devices.values()) == {"cpu"}, f"NET-7 violated: a TCP receiver's Init names {devices}"
        finally:
            joiner.close()


def _connect_quietly(sender) -> None:
    try:
        sender.connect(timeout=tm.T)
    except Exception:  # noqa: BLE001 - the joiner never answers: only the Init it was sent matters here
        pass


@pytest.mark.req("NET-7", "ACK-3", "INIT-3")
@pytest.mark.needs("network", "rendezvous")
def test_gpu_weights_reach_a_gpu_target_over_tcp_bit_for_bit(ws):
    """NET-7: a trainer whose weights are on a GPU and a copying receiver whose target is on a GPU, joined over TCP:
    the target is taken at connect (its device is its own), stays on the GPU, and holds each version bit for bit."""
    target = {n: torch.zeros_like(t) for n, t in basic(0, "cuda:0").items()}
    with ws.Sender(basic(0, "cuda:0"), 1, listen="tcp://127.0.0.1:0") as sender:
        receiver = ws.Receiver(sender.url(0), target=target)
        try:
            joined: list = []
            t = threading.Thread(target=lambda: joined.append(receiver.connect(tm.T)), daemon=True)
            t.start()
            sender.connect(timeout=tm.T)
            t.join(tm.T)
            assert joined == [0], f"NET-7 violated: a target on a GPU was not taken over TCP ({joined})"
            for k in range(1, 4):
                weights = basic(k, "cuda:0")
                assert sender.send(weights, timeout=tm.T) == k
                with receiver.reading():
                    assert receiver.version == k
                    for name, want in weights.items():
                        got = target[name]
                        assert got.device.type == "cuda", f"NET-7 violated: {name} left the GPU ({got.device})"
                        assert _bytes(got) == _bytes(want), f"ACK-3 violated: {name} of version {k} differs"
        finally:
            receiver.close()


@pytest.mark.req("NET-7", "INIT-3")
@pytest.mark.needs("network", "rendezvous", "zero_copy", "module")
def test_a_zero_copy_receiver_over_tcp_refuses_a_target_on_a_gpu(ws):
    """NET-7: a zero-copy receiver's weights are its host buffers, so a module target on a GPU is refused at
    connect (WeightsMismatchError there, ReceiverError at the sender), never rebound to host memory."""
    module = torch.nn.Linear(4, 3).cuda()
    weights = {k: v.detach().clone() for k, v in module.state_dict().items()}
    with ws.Sender(weights, 1, listen="tcp://127.0.0.1:0") as sender:
        receiver = ws.Receiver(sender.url(0), target=module, zero_copy=True)
        raised: list = []

        def join():
            try:
                receiver.connect(tm.T)
            except Exception as e:  # noqa: BLE001 - what it raised is the observation
                raised.append(e)

        t = threading.Thread(target=join, daemon=True)
        t.start()
        try:
            try:
                sender.connect(timeout=tm.T)
                refused = None
            except Exception as e:  # noqa: BLE001
                refused = e
            t.join(tm.T)
            assert type(refused).__name__ == "ReceiverError", (
                f"NET-7 violated: a zero-copy receiver took a GPU target over TCP (sender.connect: {refused!r})")
            assert raised and type(raised[0]).__name__ == "WeightsMismatchError", (
                f"INIT-3 violated: receiver.connect raised {raised!r}, not WeightsMismatchError")
            assert all(p.device.type == "cuda" for p in module.parameters()), "NET-7 violated: the target was rebound"
        finally:
            receiver.close()
