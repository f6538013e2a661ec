"""The NumPy receiver against the reference (torch) Sender: the test process plays the
trainer; every receiver is a separate process (subprocess) that never imports torch."""
import hashlib
import json
import signal
import time

import pytest

torch = pytest.importorskip("torch")
weightsync = pytest.importorskip("weightsync")
from support import MODULE, WORKER  # noqa: E402
from torch import nn  # noqa: E402

VERSIONS = 20


def make_model() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Linear(16, 4))
    model.register_buffer("bf16", torch.randn(3, 5).to(torch.bfloat16))   # bfloat16
    model.register_buffer("mask", torch.rand(7) > 0.5)                     # bool
    model.register_buffer("scale", torch.tensor(0.5))                      # 0-d
    model.register_buffer("empty", torch.zeros(0, 3))                      # no elements
    return model


@torch.no_grad()
def train_step(model: nn.Module, step: int) -> None:
    """Change every tensor of the state_dict in place, as training would."""
    for t in model.state_dict().values():
        if t.dtype == torch.bool:
            t.copy_(torch.rand(t.shape) > 0.5)
        elif t.dtype == torch.int64:
            t.add_(1)
        else:
            t.copy_(torch.randn(t.shape) * step)


def digest(model: nn.Module) -> str:
    """SHA-256 of every tensor's bytes in state_dict (manifest) order, C order."""
    h = hashlib.sha256()
    for t in model.state_dict().values():
        h.update(t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", ["push", "pull"])
def test_twenty_versions_bit_for_bit(procs, address, mode):
    model = make_model()
    with weightsync.Sender(model, 1, listen=address) as sender:
        worker = procs(WORKER, sender.url(0), mode, 0)
        sender.connect(timeout=60)
        assert worker.line().split(" ") == ["connected", "0", digest(model)]
        meta = json.loads(worker.ask("meta")[1])
        assert list(meta) == list(model.state_dict())
        assert meta["bf16"] == ["uint16", [3, 5], False]       # bfloat16 as raw uint16, read-only
        assert meta["mask"] == ["bool", [7], False] and meta["scale"] == ["float32", [], False]
        assert meta["1.num_batches_tracked"] == ["int64", [], False] and meta["empty"][:2] == ["float32", [0, 3]]
        for step in range(1, VERSIONS + 1):
            train_step(model, step)
            if mode == "push":
                assert sender.send(timeout=30) == step                 # the ack carried the version
                assert worker.ask("hash") == ["hash", str(step), digest(model)]
            else:
                future = sender.send_async(timeout=30)
                assert future.version == step and not future.done()   # a pull receiver applies in poll() only
                assert worker.ask("poll") == ["polled", str(step), digest(model)]
                assert future.wait(30) == step
        widened = model.get_buffer("bf16").float().numpy().tobytes()
        assert worker.ask("widen bf16") == ["widen", hashlib.sha256(widened).hexdigest()]
        assert worker.ask("write 0.weight")[0] == "ValueError"         # the weights mapping is read-only
        assert worker.ask("modules") == ["modules", "False", "False"]
    assert worker.ask("quit") == ["closed"]
    assert worker.wait(30) == 0


@pytest.mark.timeout(180)
@pytest.mark.parametrize("mode", ["push", "pull"])
def test_zero_copy_views_are_read_only(procs, address, mode):
    model = make_model()
    with weightsync.Sender(model, 1, listen=address) as sender:
        worker = procs(WORKER, sender.url(0), mode, 1)
        sender.connect(timeout=60)
        assert worker.line().split(" ") == ["connected", "0", digest(model)]
        for step in range(1, 6):
            train_step(model, step)
            if mode == "push":
                assert sender.send(timeout=30) == step
                assert worker.ask("hash") == ["hash", str(step), digest(model)]
            else:
                future = sender.send_async(timeout=30)
                assert worker.ask("poll") == ["polled", str(step), digest(model)]
                assert future.wait(30) == step
            reply = worker.ask("write 2.bias")
            assert reply[0] == "ValueError" and "read-only" in " ".join(reply)   # SEC-6
        assert all(not writeable for *_, writeable in json.loads(worker.ask("meta")[1]).values())
        assert worker.ask("hash") == ["hash", "5", digest(model)]            # the slot was not changed


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["push", "pull"])
def test_command_line_contract(procs, address, mode):
    """The test-control contract: `applied V SHA` per version, `stopped` at close, exit 0."""
    model = make_model()
    with weightsync.Sender(model, 1, listen=address) as sender:
        cli = procs(MODULE, sender.url(0), mode)
        sender.connect(timeout=60)
        assert cli.line() == f"applied 0 {digest(model)}"
        for step in range(1, 6):
            train_step(model, step)
            assert sender.send(timeout=30) == step
            assert cli.line() == f"applied {step} {digest(model)}"
    assert cli.line() == "stopped"
    assert cli.line() is None and cli.wait(30) == 0


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", [
    "trainer.sock",
    "trainer?%.sock",  # '?' and '%' percent-encoded in the URL (RDV-1)
])
def test_filesystem_socket_address(procs, tmp_path, name):
    model = make_model()
    with weightsync.Sender(model, 1, listen=f"unix:{tmp_path}/{name}") as sender:
        url = sender.url(0)
        assert url.count("?") == 1, f"RDV-1: {url!r} has a '?' before its query"
        cli = procs(MODULE, url)
        sender.connect(timeout=60)
        assert cli.line() == f"applied 0 {digest(model)}"
    assert cli.line() == "stopped" and cli.wait(30) == 0


@pytest.mark.timeout(120)
def test_wrong_secret_is_refused(procs, address):
    model = make_model()
    with weightsync.Sender(model, 2, listen=address) as sender:
        url = sender.url(1)
        base, secret = url.rsplit("secret=", 1)
        forged = base + "secret=" + ("0" if secret[0] != "0" else "1") + secret[1:]
        worker = procs(WORKER, forged, "push", 0)
        assert worker.line().split(" ")[:2] == ["error", "RefusedError"]
        assert worker.wait(30) == 1
        other = procs(WORKER, url.replace("receiver=1", "receiver=0"), "push", 0)   # RDV-2: i's secret is not 0's
        assert other.line().split(" ")[:2] == ["error", "RefusedError"]
        with pytest.raises(weightsync.SyncTimeoutError):
            sender.connect(timeout=1)                     # nobody joined


@pytest.mark.timeout(180)
def test_sigkill_is_seen_at_once_and_the_same_url_rejoins(procs, address):
    model = make_model()
    with weightsync.Sender(model, 1, listen=address) as sender:
        worker = procs(WORKER, sender.url(0), "push", 0)
        sender.connect(timeout=60)
        assert worker.line().split(" ")[0] == "connected"
        train_step(model, 1)
        assert sender.send(timeout=30) == 1
        digests = {1: digest(model)}
        worker.p.send_signal(signal.SIGKILL)
        worker.wait(30)
        train_step(model, 2)
        digests[2] = digest(model)    # published as 2 unless the sender already knew 0 was gone (SEND-4)
        start = time.monotonic()
        with pytest.raises(weightsync.ReceiverDiedError) as info:
            sender.send(timeout=60)
        assert time.monotonic() - start < 10               # the end of channel, not the timeout (SEND-3)
        assert info.value.workers == [0]
        latest = sender.version
        again = procs(WORKER, sender.url(0), "push", 0)    # a new process, the same URL (RDV-5)
        sender.connect(timeout=60, workers=[0])
        assert latest in (1, 2)
        assert again.line().split(" ") == ["connected", str(latest), digests[latest]]   # LIFE-1
        train_step(model, 3)
        assert sender.send(timeout=30) == latest + 1
        assert again.ask("hash") == ["hash", str(latest + 1), digest(model)]


@pytest.mark.timeout(120)
def test_push_applies_only_outside_reading_blocks(procs, address):
    """CONS-2: while a reading() block is open, the version waits; it lands once it closes."""
    model = make_model()
    with weightsync.Sender(model, 1, listen=address) as sender:
        worker = procs(WORKER, sender.url(0), "push", 0)
        sender.connect(timeout=60)
        before = worker.line().split(" ")[2]
        assert worker.ask("hold") == ["held", "0"]
        train_step(model, 1)
        future = sender.send_async(timeout=30)
        with pytest.raises(weightsync.SyncTimeoutError):
            future.wait(1)                                   # no ack while the block is open
        assert worker.ask("hash") == ["hash", "0", before]   # nested reading(): still version 0
        assert worker.ask("release") == ["released"]
        assert future.wait(30) == 1
        assert worker.ask("hash") == ["hash", "1", digest(model)]


@pytest.mark.timeout(120)
def test_pull_applies_only_in_poll(procs, address):
    """CONS-3: a pull receiver keeps its version until poll(); poll() inside reading() raises."""
    model = make_model()
    with weightsync.Sender(model, 1, listen=address) as sender:
        worker = procs(WORKER, sender.url(0), "pull", 0)
        sender.connect(timeout=60)
        before = worker.line().split(" ")[2]
        train_step(model, 1)
        future = sender.send_async(timeout=30)
        assert worker.ask("hash") == ["hash", "0", before] and not future.done()
        assert worker.ask("hold") == ["held", "0"]
        assert worker.ask("poll") == ["raised", "LocalProtocolError"]
        assert worker.ask("release") == ["released"]
        assert worker.ask("poll") == ["polled", "1", digest(model)]
        assert future.wait(30) == 1
