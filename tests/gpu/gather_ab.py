"""Which way of filling a CUDA slot is fastest for LLM-shaped models: an A/B run on a GPU.

For each model it times (GPU-synchronized, p50 of 30) three ways of copying the weights into
one slot-shaped buffer: torch._foreach_copy_ of every array; the Packer (layout.py's rule for
which runs torch._chunk_cat gathers); and every run of two or more arrays each under a MiB
gathered, the rest by _foreach_copy_ (the rule before it). Then the send p50 with an in-process
zero-copy receiver, gather on and off. Run by hand (python tests/gpu/gather_ab.py [cuda|cpu]); it prints.
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

# Sibling scripts (run as python tests/gpu/gather_ab.py, this folder is on the path).
from gather_sizes import timed
from send_profile import connected

import weightsync as ws
from weightsync import layout
from weightsync.bench.cases import llm_weights

MIB = 1 << 20


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def small_runs(manifest):
    """Runs of adjacent arrays each under a MiB; everything else copied by _foreach_copy_."""
    runs, rest, i = [], [], 0
    while i < len(manifest):
        j = i
        while j < len(manifest) and 0 < manifest[j].nbytes < MIB and len(manifest[j].shape) > 0 and (
                j == i or layout._adjacent(manifest[j - 1], manifest[j])):
            j += 1
        if j - i >= 2:
            first, last = manifest[i], manifest[j - 1]
            runs.append((i, j, first, last))
            i = j
        else:
            rest.append(i)
            i += 1
    return runs, rest


def case(kind: str, params: int, device: str) -> None:
    weights = llm_weights(params, kind, device)
    tensors = list(weights.values())
    sender = ws.Sender(weights, 1)
    manifest = sender.manifest
    nbytes = manifest[-1].offset + manifest[-1].nbytes
    buf = torch.empty(nbytes, dtype=torch.uint8, device=device)
    views = layout.views(buf, manifest)
    packer = layout.Packer(buf, manifest)
    runs, rest = small_runs(manifest)
    flats = [(i, j, buf[a.offset : b.offset + b.nbytes].view(layout.dtype_of(a.dtype)).view(1, -1)) for i, j, a, b in runs]
    rest_views = [views[k] for k in rest]
    rest_src = [tensors[k] for k in rest]

    def small_only():
        for i, j, out in flats:
            torch._chunk_cat(tensors[i:j], 0, 1, out=out)
        if rest_views:
            torch._foreach_copy_(rest_views, rest_src)

    print(f"{kind} {params:.0e}: {len(tensors)} arrays, {nbytes / 1e6:.0f} MB; packer runs {len(packer.runs)} "
          f"({sum(j - i for i, j, _ in packer.runs)} arrays); small-only runs {len(runs)} "
          f"({sum(j - i for i, j, *_ in runs)} arrays)", flush=True)
    other = torch.empty_like(buf)
    print(f"  plain copy of the bytes      {timed(lambda: other.copy_(buf), sync, 30):.3f} ms")
    print(f"  _foreach_copy_ of every one  {timed(lambda: torch._foreach_copy_(views, tensors), sync, 30):.3f} ms")
    print(f"  Packer                       {timed(lambda: packer.write(tensors), sync, 30):.3f} ms")
    print(f"  runs of arrays under a MiB   {timed(small_only, sync, 30):.3f} ms", flush=True)
    sender.close()
    saved = layout._CHUNK_CAT
    for label, cat in (("gather on", saved), ("gather off", None)):
        layout._CHUNK_CAT = cat
        sender, receiver = connected(weights)
        times = []
        for k in range(40):
            torch._foreach_add_(tensors, 1.0)
            sync()
            t0 = time.perf_counter()
            sender.send(timeout=30)
            if k >= 8:
                times.append(time.perf_counter() - t0)
        print(f"  send p50, {label:<10}        {statistics.median(times) * 1e3:.3f} ms", flush=True)
        receiver.close()
        sender.close()
    layout._CHUNK_CAT = saved


def main() -> None:
    device = sys.argv[1] if len(sys.argv) > 1 else "cuda"  # cpu: a dry run of the script itself
    sizes = (100_000_000, 500_000_000) if device == "cuda" else (1_000_000,)
    for kind in ("llm", "moe"):
        for params in sizes:
            case(kind, params, device)


if __name__ == "__main__":
    main()
