"""What the packed send's check costs at 10,000 tensors (docs/benchmark.md, "The targets this run misses").

`Packed.check()` (API-8) runs on every send of packed weights; it sums the element counts
of the tensors that do not require grad, the only ones `resize_()` accepts. This prints its
p50 for 10,000 tensors without grad (the benchmark's case), for the same as parameters
(what a model's weights are), and the floor under the first: the same sum, alone. Run by
hand: `python tools/packed_check.py`; it asserts nothing.
"""

from __future__ import annotations

import torch
from zc_gap import p50_ms  # tools/ is this script's own folder, first on its path

import weightsync as ws

TENSORS, PARAMS = 10_000, 1_000_000


def p50_us(fn) -> float:
    return p50_ms(fn, 300) * 1e3


def main() -> None:
    torch.set_num_threads(1)
    plain = ws.pack({f"t{i}": torch.randn(PARAMS // TENSORS) for i in range(TENSORS)})
    module = torch.nn.ParameterDict({f"t{i}": torch.nn.Parameter(torch.randn(PARAMS // TENSORS))
                                     for i in range(TENSORS)})
    params = ws.pack(module)
    loose = [t for t in plain.values() if not t.requires_grad]
    print(f"Packed.check(), {TENSORS} tensors without grad: {p50_us(plain.check):7.1f} us")
    print(f"Packed.check(), {TENSORS} parameters:          {p50_us(params.check):7.1f} us")
    print(f"the sum of their element counts alone:       {p50_us(lambda: sum(map(torch.Tensor.numel, loose))):7.1f} us")


if __name__ == "__main__":
    main()
