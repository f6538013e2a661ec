"""The parts of the CUDA path that need no GPU: which device a slot maps to, how a slot is
found, what the packer gathers, and the read fence's no-op on CPU (CUDA-1, CUDA-5, CUDA-6, CUDA-7).
The GPU side of each is in tests/test_cuda.py."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from weightsync import apply, devices, layout, slots
from weightsync.messages import Entry, Init

INIT = Init("1.1", 0, (Entry("a", "float32", (2,), "cpu", 0, 8), Entry("b", "int64", (), "cpu", 64, 8)), (), 0, 0)
UUIDS = ["aaaaaaaa-0000-0000-0000-000000000000", "bbbbbbbb-0000-0000-0000-000000000000"]


def test_a_slot_maps_on_the_device_with_its_uuid_whatever_its_index_here():
    """CUDA-7: the sender's cuda:1 is this process's cuda:0 when only it is visible, or cuda:0 when reordered."""
    assert slots.local_index(UUIDS[1], 1, UUIDS) == 1
    assert slots.local_index(UUIDS[1], 1, UUIDS[1:]) == 0
    assert slots.local_index(UUIDS[1], 1, list(reversed(UUIDS))) == 0
    assert slots.local_index(UUIDS[0], 0, list(reversed(UUIDS))) == 1


def test_a_slot_without_uuid_falls_back_to_the_index():
    """CUDA-7: a 1.1 sender names no UUID."""
    assert slots.local_index("", 1, UUIDS[1:]) == 1


def test_a_uuid_nobody_here_has_is_refused_not_guessed():
    """CUDA-7: never map by index a slot whose UUID this process cannot see."""
    with pytest.raises(ValueError, match="CUDA-7"):
        slots.local_index(UUIDS[0], 0, UUIDS[1:])
    with pytest.raises(ValueError, match="CUDA_VISIBLE_DEVICES"):
        slots.local_index(UUIDS[0], 0, [])


def _ipc(handle: bytes, offset: int, uuid: str = UUIDS[0]) -> tuple:
    # torch's _share_cuda_(): device, handle, size, offset, ref-count handle, ref-count offset, event, sync
    return (0, handle, 4096, offset, b"ref", 0, b"ev", False, b"slot-event", uuid)


def test_slots_in_one_segment_are_told_apart_by_offset():
    """CUDA-5: small slots share the segment's IPC handle; (handle, offset) is what names a slot."""
    assert slots.ipc_key(_ipc(b"seg", 0)) != slots.ipc_key(_ipc(b"seg", 4096))
    assert slots.ipc_key(_ipc(b"seg", 512)) == slots.ipc_key(_ipc(b"seg", 512, UUIDS[1]))


def test_the_packer_gathers_only_when_the_weights_live_on_the_buffers_device(monkeypatch):
    """CUDA-1: CUDA weights bound for a CPU slot are copied array by array (_chunk_cat wants one device)."""
    monkeypatch.setattr(layout, "_GATHER_FROM", 2)  # these three arrays would form a run
    flat = {"w": torch.zeros(16, 16), "b": torch.zeros(16), "v": torch.zeros(16, 16)}
    manifest = layout.make_manifest(flat)
    buffer = torch.zeros(layout.slot_nbytes(manifest, "cpu"), dtype=torch.uint8)
    assert layout.Packer(buffer, manifest).runs, "CPU weights into a CPU slot form runs"
    assert layout.Packer(buffer, manifest, source="cpu").runs
    packer = layout.Packer(buffer, manifest, source=torch.device("cuda", 0))
    assert packer.runs == [] and len(packer._rest_views) == len(manifest)  # each array copied on its own
    assert not layout.gathers(torch.device("cpu"), torch.device("cuda", 0))
    assert not layout.gathers(torch.device("cuda", 0), torch.device("cpu"))
    assert not layout.gathers(torch.device("cuda", 0), torch.device("cuda", 1))
    assert layout.gathers(torch.device("cuda", 1), torch.device("cuda", 1))  # one GPU: one kernel per run


def test_a_cpu_slot_group_knows_where_its_weights_live(monkeypatch):
    """CUDA-1: the pool makes each CPU slot with the source device, so every slot it adds later packs alike."""
    monkeypatch.setattr(layout, "_GATHER_FROM", 2)  # from the CPU these two arrays would form a run
    manifest = (Entry("w", "float32", (4,), "cpu", 0, 16), Entry("b", "float32", (4,), "cpu", 64, 16))
    pool = slots.SlotPool(3)
    try:
        group = pool.add_group(torch.device("cpu"), 128, manifest, torch.device("cuda", 0))
        pool.choose(group, {})  # a third slot, allocated later
        assert all(s._packer.runs == [] for s in group.slots)
    finally:
        pool.close()


@pytest.mark.parametrize("conf,on", [("expandable_segments:True", True), ("expandable_segments:False", False),
                                     ("max_split_size_mb:64, expandable_segments : true", True), ("", False)])
def test_expandable_segments_are_seen_in_the_allocator_settings(monkeypatch, conf, on):
    """CUDA-4: slots are allocated with expandable segments off when the trainer turned them on."""
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", conf)
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    assert slots._expandable_segments() is on


def test_the_read_fence_of_a_cpu_receiver_does_nothing():
    """CUDA-6 concerns CUDA receivers only: a CPU receiver's reading() records nothing."""
    fence = apply.ReadFence(torch.device("cpu"))
    fence.record()
    fence.wait()
    assert fence._events == {}


# ---- the network profile with weights on GPUs (NET-7): the parts that need no GPU ----


def test_a_sender_listening_on_tcp_keeps_its_slots_on_the_cpu():
    """NET-7: a TCP listener's slots are host memory by default, and a GPU slot device is refused with the remedy
    (before any CUDA call: the rule holds on a machine without a GPU too)."""
    import weightsync as ws
    from weightsync import options, profiles

    assert options.slot_devices(None, 2, torch.device("cpu"), profiles.NETWORK) == [torch.device("cpu")] * 2
    for asked in (["cuda"], ["cuda:0"], lambda i: "cuda:1"):
        with pytest.raises(ValueError, match="NET-7"):
            ws.Sender({"w": torch.zeros(4)}, 1, listen="tcp://127.0.0.1:0", devices=asked)
    with ws.Sender({"w": torch.zeros(4)}, 1, listen="tcp://127.0.0.1:0", devices=["cpu"]) as s:
        assert s.manifest[0].device == "cpu"


class _Fake:
    """Stands for a tensor on a device this machine lacks: flatten() yields it, the rewrite reads its device."""

    def __init__(self, device: str):
        self.device = torch.device(device)


def test_a_network_receivers_manifest_moves_to_its_targets_device(monkeypatch):
    """NET-7: a copying network receiver checks its target against the manifest on the target's own device (one
    device); the Init is left alone for no target, a zero-copy receiver, a CPU target or a target on two devices."""
    on = devices.target_device
    assert on(None, False) is None
    assert on({"a": torch.zeros(2), "b": torch.tensor(0)}, False) == "cpu"
    assert devices.with_device(INIT, "cpu") is INIT  # the network's manifest names the CPU already
    monkeypatch.setattr(layout, "flatten", lambda target, detach=True: {k: _Fake(d) for k, d in target.items()})
    assert on({"a": "cuda:1", "b": "cuda:1"}, False) == "cuda:1"
    assert on({"a": "cuda:1", "b": "cuda:1"}, True) is None  # zero-copy: its weights are the host buffers
    assert on({"a": "cuda:0", "b": "cuda:1"}, False) is None  # two devices: the check names what differs
    assert on({"a": "meta", "b": "meta"}, False) is None  # neither CPU nor GPU: left to the check too


def test_a_gpu_slot_points_the_manifest_at_this_process_index_of_it():
    """CUDA-1: the slot's device as mapped here (another index under another CUDA_VISIBLE_DEVICES); none for a
    slot in host memory or one already closed."""
    assert devices.mapped_device(slots.Mapped(_Fake("cuda:1"))) == "cuda:1"
    assert devices.mapped_device(slots.Mapped(torch.zeros(8, dtype=torch.uint8))) is None
    closed = slots.Mapped(_Fake("cuda:0"))
    closed.close()
    assert devices.mapped_device(closed) is None


def test_one_rewrite_puts_every_manifest_entry_on_the_device_its_caller_chose():
    """CUDA-1 and NET-7 share with_device: every entry moves, nothing else of the Init changes, and an Init whose
    entries are all there already comes back as itself (no copy per connect)."""
    moved = devices.with_device(INIT, "cuda:1")
    assert [e.device for e in moved.manifest] == ["cuda:1", "cuda:1"]
    assert [(e.name, e.dtype, e.shape, e.offset, e.nbytes) for e in moved.manifest] == [
        (e.name, e.dtype, e.shape, e.offset, e.nbytes) for e in INIT.manifest]
    assert dataclasses.replace(moved, manifest=INIT.manifest) == INIT
    assert devices.with_device(moved, "cuda:1") is moved
    mixed = dataclasses.replace(INIT, manifest=(moved.manifest[0], INIT.manifest[1]))
    assert [e.device for e in devices.with_device(mixed, "cuda:0").manifest] == ["cuda:0", "cuda:0"]
