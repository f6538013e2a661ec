"""When does one torch._chunk_cat beat torch._foreach_copy_? Times both filling one flat buffer
from n arrays of one size, for sizes from 256 B to 4 MiB (python tests/gpu/gather_sizes.py [cuda|cpu]).
The Packer's bound on what it gathers (layout._GATHER_BELOW) comes from this table; it prints."""

from __future__ import annotations

import statistics
import sys
import time

import torch


def timed(fn, sync, reps=20):
    for _ in range(3):
        fn()
    sync()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t0)
    return statistics.median(out) * 1e3


def compare(size: int, n: int, device: str, sync) -> tuple[float, float]:
    """(per-array copies ms, one gather ms) filling one buffer from `n` bf16 arrays of `size` bytes."""
    arrays = [torch.randn(size // 2, device=device).bfloat16() for _ in range(n)]
    flat = torch.empty(size * n, dtype=torch.uint8, device=device).view(torch.bfloat16).view(1, -1)
    views = list(flat.view(-1).split(size // 2))
    return (timed(lambda: torch._foreach_copy_(views, arrays), sync),
            timed(lambda: torch._chunk_cat(arrays, 0, 1, out=flat), sync))


def main() -> None:
    device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    torch.set_num_threads(1)
    print(f"{device}: bytes per array, arrays, bf16: foreach ms, gather ms, gather/foreach")
    for size in (256, 4096, 32 << 10, 128 << 10, 512 << 10, 2 << 20, 4 << 20):
        for n in (8, 64, 512, 3000):
            if size * n > (1 << 30) or (device == "cpu" and size * n > (256 << 20)):
                continue
            f, g = compare(size, n, device, sync)
            print(f"{size:>9} {n:>5}  {f:8.3f} {g:8.3f}  {g / f:5.2f}", flush=True)

if __name__ == "__main__":
    main()
