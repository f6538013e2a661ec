"""What one benchmark case is and how it is timed.

This module owns the Case record (one system sending one model to N receivers), the
grid of sizes, receiver counts and layouts that cases are drawn from, the construction
of a model's weights, and the timing loop every system shares, so that floors,
baselines and weightsync variants are measured the same way.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import dataclass

import torch

SIZES = (1e3, 1e5, 1e6, 1e7, 1e8)
RECEIVERS = (1, 2, 4, 8)
LAYOUTS = {"few": 6, "many": 500, "huge": 10000, "llm": 290, "moe": 3042}  # tensors per model
# A layout named here runs only at these sizes: 10,000 tensors need enough parameters to be
# more than a handful each, and each larger size would lengthen the full run. The LLM-shaped
# layouts run at their own sizes, which the grid of SIZES does not hold.
LAYOUT_SIZES = {"huge": (1e6,), "llm": (1e8, 5e8), "moe": (1e8, 5e8)}
#: Layouts shaped like a decoder-only LLM in bf16 (see llm_weights), and the most receivers they run with.
LLM_LAYOUTS = {"llm": 4, "moe": 4}
#: How long any step of a benchmark may wait on a worker before the run fails.
TIMEOUT = 120.0


@dataclass
class Case:
    device: str
    params: int
    layout: str
    tensors: int
    nbytes: int
    receivers: int
    system: str
    dtype: str = "float32"
    p50: float = math.nan  # seconds
    p90: float = math.nan
    reps: int = 0
    fds: int | None = None  # descriptors the sender holds (weightsync only)
    note: str = ""

    @property
    def throughput(self) -> float:
        """Bytes delivered per second: every receiver gets the whole model (copy and pipe: n/a)."""
        if self.system in ("copy", "tensor copy", "pipe") or not self.p50 > 0:
            return math.nan
        return self.nbytes * self.receivers / self.p50


def lookup(cases: list[Case]) -> dict[tuple, Case]:
    """The cases that produced a figure, by (device, params, layout, receivers, system)."""
    return {(c.device, c.params, c.layout, c.receivers, c.system): c for c in cases if c.p50 == c.p50}


def runs_at(layout: str, params: float) -> bool:
    return params in LAYOUT_SIZES.get(layout, (params,))


def make_weights(params: int, tensors: int, device: str = "cpu") -> dict[str, torch.Tensor]:
    """`params` float32 parameters in `tensors` tensors of nearly equal size.

    Sizes differ by at most one element and add up to `params` exactly, so a layout changes
    only the number of tensors, never the bytes. With fewer parameters than tensors there
    are fewer tensors (one element each) rather than empty ones.
    """
    tensors = min(tensors, params)
    base, extra = divmod(params, tensors)
    return {f"w{i:03d}": torch.empty(base + (i < extra), device=device).uniform_() for i in range(tensors)}


def llm_weights(params: int, layout: str, device: str = "cpu") -> dict[str, torch.Tensor]:
    """About `params` bf16 parameters named and shaped like a decoder-only transformer.

    "llm": 24 dense layers of 12 tensors (norms, q/k/v with biases and grouped k/v, o, a
    SwiGLU MLP three times the hidden size), 290 tensors, as a 0.5 B-parameter model has
    about 300. "moe": 16 layers whose MLP is 60 experts of three matrices with a router,
    3,042 tensors. The hidden size is the largest multiple of 64 that leaves the embedding
    a vocabulary of 1,000 or more; the vocabulary then takes up the rest, so the count is
    within one hidden size of `params`.
    """
    experts, layers = (60, 16) if layout == "moe" else (0, 24)

    def block(i: int, d: int) -> list[tuple[str, tuple[int, ...]]]:
        kv, at = d // 4, f"model.layers.{i}.self_attn"
        out = [(f"model.layers.{i}.input_layernorm.weight", (d,)), (f"{at}.q_proj.weight", (d, d)),
               (f"{at}.q_proj.bias", (d,)), (f"{at}.k_proj.weight", (kv, d)), (f"{at}.k_proj.bias", (kv,)),
               (f"{at}.v_proj.weight", (kv, d)), (f"{at}.v_proj.bias", (kv,)), (f"{at}.o_proj.weight", (d, d)),
               (f"model.layers.{i}.post_attention_layernorm.weight", (d,))]
        mlp = f"model.layers.{i}.mlp"
        if not experts:
            return out + [(f"{mlp}.gate_proj.weight", (3 * d, d)), (f"{mlp}.up_proj.weight", (3 * d, d)),
                          (f"{mlp}.down_proj.weight", (d, 3 * d))]
        out.append((f"{mlp}.gate.weight", (experts, d)))
        for e in range(experts):
            out += [(f"{mlp}.experts.{e}.gate_proj.weight", (d // 2, d)),
                    (f"{mlp}.experts.{e}.up_proj.weight", (d // 2, d)),
                    (f"{mlp}.experts.{e}.down_proj.weight", (d, d // 2))]
        return out

    def body(d: int) -> list[tuple[str, tuple[int, ...]]]:
        return [s for i in range(layers) for s in block(i, d)] + [("model.norm.weight", (d,))]

    def count(d: int) -> int:
        return sum(math.prod(shape) for _, shape in body(d))

    d = 64
    while count(d + 64) + 1000 * (d + 64) <= params:
        d += 64
    vocab = max(1000, (params - count(d)) // d)
    shapes = [("model.embed_tokens.weight", (vocab, d)), *body(d)]
    return {name: torch.empty(shape, dtype=torch.bfloat16, device=device).uniform_() for name, shape in shapes}


def model_weights(params: int, layout: str, device: str = "cpu") -> dict[str, torch.Tensor]:
    """The weights of one benchmark model: LLM-shaped for those layouts, else `make_weights`."""
    if layout in LLM_LAYOUTS:
        return llm_weights(params, layout, device)
    return make_weights(params, LAYOUTS[layout], device)


def sync(device: str) -> None:
    if device != "cpu":
        torch.cuda.synchronize()


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def timed(fn, budget: float, min_reps: int, max_reps: int, measure_self: bool = False) -> list[float]:
    """Warm-up calls, then timed calls until `budget` seconds pass (within the bounds on their number).

    Two warm-up calls, or one when it alone took a third of the budget (a slow baseline).
    With `measure_self`, `fn` returns the seconds to count (it leaves its own setup out).
    """
    t = time.perf_counter()
    fn()
    if time.perf_counter() - t < budget / 3:
        fn()
    out: list[float] = []
    start = time.perf_counter()
    while len(out) < min_reps or (len(out) < max_reps and time.perf_counter() - start < budget):
        t = time.perf_counter()
        got = fn()
        out.append(got if measure_self else time.perf_counter() - t)
    return out


def fill(case: Case, times: list[float]) -> Case:
    s = sorted(times)
    case.p50 = statistics.median(s)
    case.p90 = s[min(len(s) - 1, int(0.9 * len(s)))]
    case.reps = len(s)
    return case


def fmt_params(p: float) -> str:
    """1000 -> 1e3, 2000000 -> 2e6; small counts as they are."""
    if p < 100:
        return str(int(p))
    mantissa, exponent = f"{p:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"
