"""Where the time of one send goes: `python -m weightsync.bench.stages`.

One sender in this process and one push receiver in a spawned process; both stamp
`time.perf_counter()` (CLOCK_MONOTONIC on Linux, so one clock for both processes) at
the stage boundaries, by wrapping the functions that start and end each stage:

    check     send() called -> the slot copy starts   (argument and layout checks, slot choice)
    copy      the slot copy                           (one copy into the slot)
    notify    the copy ends -> the Receive is written (version bookkeeping, encoding, the write)
    wake      the Receive is written -> the receiver reads its socket (scheduler wake-up)
    decode    -> the receiver starts applying         (read, decode, the apply lock)
    apply     the apply, up to the Ack's write        (one copy into the receiver's tensors)
    ack       the Ack's write -> send() returns       (encoding, the write, the sender's wake-up, decode, settle)

Packed weights (`weightsync.pack`) are copied by `write_buffer`, stamped alike.
It prints one Markdown table (p50 in µs per stage). The wrappers themselves cost about a
microsecond per stamp, so the stages add up to slightly more than an unwrapped send.
"""

from __future__ import annotations

import argparse
import bisect
import statistics
import time

import torch
import torch.multiprocessing as mp

# (params, tensors, weights): the trainer's own tensors, or packed by weightsync.pack as plain tensors
# (each one's size is summed on every send: resize_() accepts them) or as a module's parameters.
CASES = [(1_000, 6, "own"), (1_000_000, 6, "own"), (1_000_000, 500, "own"), (1_000_000, 10_000, "own"),
         (1_000_000, 10_000, "packed"), (1_000_000, 10_000, "packed parameters"), (10_000_000, 6, "own")]
STAGES = ("check", "copy", "notify", "wake", "decode", "apply", "ack")


def _receiver(handle, out, zero_copy: bool) -> None:
    from weightsync import applier as amod
    from weightsync import messages, transport

    from .. import Receiver

    torch.set_num_threads(1)
    log: list[tuple[str, float, int]] = []  # (mark, time, the version applied or acked; -1 for a read)
    fill, apply, send = transport.Channel.fill, amod.Applier._apply_and_ack, transport.Channel.send

    def stamped_fill(self):
        log.append(("fill", time.perf_counter(), -1))
        return fill(self)

    def stamped_apply(self, msg):
        log.append(("apply", time.perf_counter(), msg.version))
        return apply(self, msg)

    def stamped_send(self, msg, *rest):
        if isinstance(msg, messages.Ack):  # stamped before the write: the sender cannot return before it
            log.append(("acked", time.perf_counter(), msg.version))
        return send(self, msg, *rest)

    transport.Channel.fill = stamped_fill  # type: ignore[method-assign]
    amod.Applier._apply_and_ack = stamped_apply  # type: ignore[method-assign]
    transport.Channel.send = stamped_send  # type: ignore[method-assign]
    with Receiver(handle, zero_copy=zero_copy) as r:
        r.connect(60)
        while not r.stopped:
            time.sleep(0.01)
    out.put(log)


def profile(params: int, tensors: int, sends: int, zero_copy: bool = False, weights_kind: str = "own") -> dict[str, float]:
    """p50 in seconds of each stage over `sends` sends (the first fifth is warm-up)."""
    from weightsync import messages, slots, transport

    from .. import Packed, Sender, pack

    torch.set_num_threads(1)
    sizes = [params // tensors + (1 if i < params % tensors else 0) for i in range(tensors)]
    weights = {f"t{i}": torch.randn(n) for i, n in enumerate(sizes)}
    source: Packed | dict[str, torch.Tensor]
    if weights_kind == "packed parameters":
        source = pack(torch.nn.ParameterDict({k: torch.nn.Parameter(v) for k, v in weights.items()}))
    else:
        source = pack(weights) if weights_kind == "packed" else weights
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    sender = Sender(source, 1, ctx=ctx)
    proc = ctx.Process(target=_receiver, args=(sender.handle(0), out, zero_copy), daemon=True)
    proc.start()
    sender.connect(120)
    log: list[tuple[str, float]] = []
    send, write, write_buffer = transport.Channel.send, slots.CpuSlot.write, slots.CpuSlot.write_buffer

    def stamped_send(self, msg, *rest):
        if isinstance(msg, messages.Receive):
            log.append(("written", time.perf_counter()))
            log.append(("version", msg.version))
        return send(self, msg, *rest)

    def stamped_write(self, tensors):
        log.append(("copy0", time.perf_counter()))
        try:
            return write(self, tensors)
        finally:
            log.append(("copy1", time.perf_counter()))

    def stamped_write_buffer(self, buffer, tensors):
        log.append(("copy0", time.perf_counter()))
        try:
            return write_buffer(self, buffer, tensors)
        finally:
            log.append(("copy1", time.perf_counter()))

    transport.Channel.send = stamped_send  # type: ignore[method-assign]
    slots.CpuSlot.write = stamped_write  # type: ignore[method-assign]
    slots.CpuSlot.write_buffer = stamped_write_buffer  # type: ignore[method-assign]
    rows = []
    try:
        for _ in range(sends):
            log.clear()
            t0 = time.perf_counter()
            sender.send(timeout=60)
            rows.append((t0, time.perf_counter(), dict(log)))
    finally:
        transport.Channel.send = send  # type: ignore[method-assign]
        slots.CpuSlot.write = write  # type: ignore[method-assign]
        slots.CpuSlot.write_buffer = write_buffer  # type: ignore[method-assign]
        sender.close()
    rlog = out.get(timeout=60)
    proc.join(30)
    # The receiver's marks are paired with a send by its version, not by time order: on a shared core the
    # sender may return and start its next send before the receiver has run on past its Ack.
    reads = [t for name, t, _ in rlog if name == "fill"]
    applied = {(name, v): t for name, t, v in rlog if name != "fill"}
    stages: dict[str, list[float]] = {s: [] for s in (*STAGES, "total")}
    for t0, t1, s in rows[sends // 5:]:
        v = int(s.get("version", -1))
        if not {"copy0", "copy1", "written"} <= s.keys() or ("apply", v) not in applied:
            continue  # a send whose Receive went out some other way (none expected)
        i = bisect.bisect_left(reads, s["written"])
        if i == len(reads):
            continue
        marks = [t0, s["copy0"], s["copy1"], s["written"], reads[i], applied["apply", v], applied["acked", v], t1]
        if any(b < a for a, b in zip(marks, marks[1:])):
            continue  # a stamp taken late (its process descheduled after the event it marks): no stage to time
        for name, a, b in zip(STAGES, marks, marks[1:]):
            stages[name].append(b - a)
        stages["total"].append(t1 - t0)
    return {k: statistics.median(v) for k, v in stages.items() if v}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m weightsync.bench.stages", description=__doc__.split("\n")[0])
    parser.add_argument("--sends", type=int, default=300, help="sends per case (default 300)")
    parser.add_argument("--zero-copy", action="store_true", help="a zero-copy receiver (no apply copy)")
    args = parser.parse_args(argv)
    print("| params | tensors | weights | " + " | ".join(STAGES) + " | total |")
    print("|---:|---:|---|" + "---:|" * (len(STAGES) + 1))
    for params, tensors, kind in CASES:
        sends = args.sends if params < 10_000_000 else max(20, args.sends // 5)
        p50 = profile(params, tensors, sends, args.zero_copy, kind)
        cells = [f"{p50[s] * 1e6:.0f}" if s in p50 else "-" for s in (*STAGES, "total")]
        print(f"| {params:.0e} | {tensors} | {kind} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
