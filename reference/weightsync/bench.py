"""`python -m weightsync bench`: send latency next to its floors and baselines, in one run.

Every case runs the sender in this process and the receivers in spawned worker
processes, which are started once and reused across cases (starting a process
that imports torch costs seconds on a small machine). Next to each weightsync
figure the same run measures:

- copy: one plain copy of the same number of bytes in this process, the floor
  of any consistent update (the sender must copy the weights out of the trainer);
- pipe: a small message to each of N workers over a Pipe and the answers back,
  the floor of the notification;
- queue: a naive baseline, the state_dict cloned and put into one mp.Queue per
  worker, each worker copying it into its own tensors and answering on a queue;
- torchrl: TorchRL's SharedMemWeightSyncScheme, when `torchrl` imports, with a
  trainer whose weights are distinct from the shared buffer.

Every process uses one torch thread unless --threads says otherwise (see run()).
Results go to results.md, results.json and one latency plot per layout under --out.
No figure here is asserted anywhere: the tests only run the benchmark tiny.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from multiprocessing import connection
from pathlib import Path

import torch
import torch.multiprocessing as mp

from .receiver import Receiver
from .sender import Sender

SIZES = (1e3, 1e5, 1e6, 1e7, 1e8)
RECEIVERS = (1, 2, 4, 8)
LAYOUTS = {"few": 6, "many": 500}  # tensors per model
VARIANTS = {  # system name -> (mode, zero_copy)
    "weightsync push zero-copy": ("push", True),
    "weightsync push": ("push", False),
    "weightsync pull zero-copy": ("pull", True),
    "weightsync pull": ("pull", False),
}
QUICK = dict(sizes=(1e3, 1e6, 1e7), receivers=(1, 4), budget=0.25, min_reps=5, max_reps=40)
FULL = dict(sizes=SIZES, receivers=RECEIVERS, budget=1.5, min_reps=5, max_reps=300)
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
    p50: float = math.nan  # seconds
    p90: float = math.nan
    reps: int = 0
    fds: int | None = None  # descriptors the sender holds (weightsync only)
    note: str = ""

    @property
    def throughput(self) -> float:
        """Bytes delivered per second: every receiver gets the whole model (copy and pipe: n/a)."""
        if self.system in ("copy", "pipe") or not self.p50 > 0:
            return math.nan
        return self.nbytes * self.receivers / self.p50


# ---- workers ----------------------------------------------------------------


def _worker(index: int, ctl, data_q, ack_q) -> None:
    """One reusable worker: runs the receiving side of whatever case `ctl` names."""
    torch.set_num_threads(1)
    while True:
        cmd = ctl.recv()
        kind = cmd[0]
        if kind == "exit":
            return
        try:
            if kind == "ping":
                result = None
            elif kind == "weightsync":
                _, handle, mode, zero_copy = cmd
                with Receiver(handle, mode=mode, zero_copy=zero_copy) as rx:
                    rx.connect(timeout=TIMEOUT)
                    ctl.send(("connected", index))
                    while not rx.stopped:
                        if mode == "pull":
                            rx.poll(timeout=1.0)
                        else:
                            time.sleep(0.005)  # applies happen on the receiver's own thread
                    result = rx.version
            elif kind == "pipe":
                _, conn = cmd
                while (msg := conn.recv()) is not None:
                    conn.send(msg)
                conn.close()
                result = None
            elif kind == "queue":
                _, shapes, device = cmd
                own = [torch.empty(s, device=device) for s in shapes]
                while (item := data_q.get()) is not None:
                    version, state = item
                    with torch.no_grad():
                        torch._foreach_copy_(own, list(state.values()))
                    _sync(device)
                    del state
                    ack_q.put((index, version))
                result = None
            else:
                raise ValueError(f"unknown command {kind!r}")
            ctl.send(("done", result))
        except Exception as e:  # noqa: BLE001 - reported to the parent, which names the case
            for arg in cmd[1:]:  # a handle or pipe end left open would keep the sender waiting
                conn = getattr(arg, "conn", arg)
                if isinstance(conn, connection.Connection):
                    conn.close()
            ctl.send(("error", f"{type(e).__name__}: {e}"))
        cmd = None


class Pool:
    """`n` spawned workers, each with a control pipe and a data queue; one shared ack queue."""

    def __init__(self, n: int, ctx):
        self.ctx = ctx
        self.ack_q = ctx.Queue()
        self.data_q = [ctx.Queue() for _ in range(n)]
        self.ctl = []
        self.procs = []
        for i in range(n):
            ours, theirs = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(i, theirs, self.data_q[i], self.ack_q), daemon=True)
            p.start()
            theirs.close()
            self.ctl.append(ours)
            self.procs.append(p)
        self.command(n, lambda i: ("ping",))
        self.expect(n, "done")  # every worker has imported torch and waits for cases

    def command(self, n: int, make) -> None:
        for i in range(n):
            self.ctl[i].send(make(i))

    def expect(self, n: int, what: str, timeout: float = TIMEOUT) -> list:
        out = []
        for i in range(n):
            if not self.ctl[i].poll(timeout):
                raise TimeoutError(f"worker {i} did not answer {what!r} within {timeout:.0f} s")
            kind, value = self.ctl[i].recv()
            if kind == "error":
                raise RuntimeError(f"worker {i}: {value}")
            if kind != what:
                raise RuntimeError(f"worker {i} answered {kind!r}, expected {what!r}")
            out.append(value)
        return out

    def drain(self, n: int, timeout: float = 30.0) -> None:
        """After a failed case: read each worker's messages until it reports the case ended."""
        for c in self.ctl[:n]:
            deadline = time.monotonic() + timeout
            while c.poll(max(0.0, deadline - time.monotonic())):
                if c.recv()[0] in ("done", "error"):
                    break

    def close(self) -> None:
        for c in self.ctl:
            try:
                c.send(("exit",))
            except OSError:
                pass
        for p in self.procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        for q in (*self.data_q, self.ack_q):
            q.close()
            q.join_thread()


# ---- measurements -----------------------------------------------------------


def make_weights(params: int, tensors: int, device: str = "cpu") -> dict[str, torch.Tensor]:
    """`params` float32 parameters in `tensors` tensors of nearly equal size."""
    tensors = min(tensors, params)
    base, extra = divmod(params, tensors)
    return {f"w{i:03d}": torch.empty(base + (i < extra), device=device).uniform_() for i in range(tensors)}


def cuda_supported() -> bool:
    """CUDA cases run when the binding names the capability and a device is present (API-5)."""
    from . import CAPABILITIES

    return "cuda" in CAPABILITIES and torch.cuda.is_available()


def _sync(device: str) -> None:
    if device != "cpu":
        torch.cuda.synchronize()


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def _timed(fn, budget: float, min_reps: int, max_reps: int) -> list[float]:
    """Warm-up calls, then timed calls until `budget` seconds pass (within the bounds on their number).

    Two warm-up calls, or one when it alone took a third of the budget (a slow baseline).
    """
    t = time.perf_counter()
    fn()
    if time.perf_counter() - t < budget / 3:
        fn()
    out: list[float] = []
    start = time.perf_counter()
    while len(out) < min_reps or (len(out) < max_reps and time.perf_counter() - start < budget):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def _fill(case: Case, times: list[float]) -> Case:
    s = sorted(times)
    case.p50 = statistics.median(s)
    case.p90 = s[min(len(s) - 1, int(0.9 * len(s)))]
    case.reps = len(s)
    return case


def bench_copy(weights, device, budget, lo, hi) -> list[float]:
    """One copy of the same bytes (as one float32 tensor) on the weights' device."""
    numel = sum(t.numel() for t in weights.values())
    src = torch.empty(numel, device=device).uniform_()
    dst = torch.zeros_like(src)  # touched now, so page faults are not timed

    def copy():
        dst.copy_(src)
        _sync(device)

    return _timed(copy, budget, lo, hi)


def bench_pipe(pool: Pool, n: int, budget, lo, hi) -> list[float]:
    pairs = [pool.ctx.Pipe() for _ in range(n)]
    pool.command(n, lambda i: ("pipe", pairs[i][1]))
    for _, theirs in pairs:
        theirs.close()
    ours = [a for a, _ in pairs]

    def round_trip():
        for c in ours:
            c.send(1)
        for c in ours:
            c.recv()

    try:
        return _timed(round_trip, budget, lo, hi)
    finally:
        for c in ours:
            c.send(None)
        pool.expect(n, "done")
        for c in ours:
            c.close()


def bench_weightsync(pool: Pool, weights, n: int, mode: str, zero_copy: bool, budget, lo, hi):
    before = fd_count()
    sender = Sender(weights, n, ctx=pool.ctx)
    try:
        pool.command(n, lambda i: ("weightsync", sender.handle(i), mode, zero_copy))
        sender.connect(timeout=TIMEOUT)
        pool.expect(n, "connected")
        times = _timed(lambda: sender.send(timeout=TIMEOUT), budget, lo, hi)
        fds = fd_count() - before
        version = sender.version
    except BaseException:
        sender.close()
        pool.drain(n)  # the workers end this case (Stop reaches them) before the next one starts
        raise
    sender.close()
    finals = pool.expect(n, "done")
    if finals != [version] * n:
        raise RuntimeError(f"receivers ended at versions {finals}, the sender at {version}")
    return times, fds


def bench_queue(pool: Pool, weights, device, n: int, budget, lo, hi) -> list[float]:
    shapes = [tuple(t.shape) for t in weights.values()]
    pool.command(n, lambda i: ("queue", shapes, device))
    version = [0]

    def send():
        version[0] += 1
        state = {k: v.clone() for k, v in weights.items()}  # a snapshot the trainer cannot change
        for q in pool.data_q[:n]:
            q.put((version[0], state))
        for _ in range(n):
            pool.ack_q.get(timeout=TIMEOUT)

    try:
        return _timed(send, budget, lo, hi)
    finally:
        for q in pool.data_q[:n]:
            q.put(None)
        pool.expect(n, "done")


# ---- TorchRL (optional) -----------------------------------------------------


def torchrl_version() -> str | None:
    try:
        import torchrl
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return None
    return getattr(torchrl, "__version__", "unknown")


def _torchrl_once(ctl, scheme, index: int, shapes, stop) -> None:
    """A TorchRL worker: a module with the same parameter names, synchronised by `scheme`."""
    torch.set_num_threads(1)
    try:
        model = torch.nn.Module()
        for i, shape in enumerate(shapes):
            model.register_parameter(f"w{i:03d}", torch.nn.Parameter(torch.empty(shape), requires_grad=False))
        scheme.init_on_receiver(model_id="policy", model=model, worker_idx=index)
        scheme.connect(worker_idx=index)
        ctl.send(("connected", index))
        stop.wait()
        ctl.send(("done", None))
    except Exception as e:  # noqa: BLE001 - reported to the parent, which names the case
        ctl.send(("error", f"{type(e).__name__}: {e}"))


def bench_torchrl(ctx, weights, n: int, budget, lo, hi) -> list[float]:
    """TorchRL's scheme, in fresh processes: its queues reach a worker only when it is started."""
    from tensordict import TensorDict
    from torchrl.weight_update import SharedMemWeightSyncScheme

    trainer = TensorDict(dict(weights))  # the trainer's own weights, distinct from the shared buffer
    scheme = SharedMemWeightSyncScheme()
    scheme.init_on_sender(model_id="policy", weights=trainer.clone(), devices=[torch.device("cpu")] * n, ctx=ctx)
    shapes = [tuple(t.shape) for t in weights.values()]
    stop = ctx.Event()
    pipes = [ctx.Pipe() for _ in range(n)]
    procs = [
        ctx.Process(target=_torchrl_once, args=(theirs, scheme, i, shapes, stop), daemon=True)
        for i, (_, theirs) in enumerate(pipes)
    ]
    for p in procs:
        p.start()
    for _, theirs in pipes:
        theirs.close()
    try:
        scheme.connect()
        for i, (ours, _) in enumerate(pipes):
            if not ours.poll(TIMEOUT):
                raise TimeoutError(f"torchrl worker {i} did not connect")
            kind, value = ours.recv()
            if kind == "error":
                raise RuntimeError(f"torchrl worker {i}: {value}")
        return _timed(lambda: scheme.send(weights=trainer), budget, lo, hi)
    finally:
        stop.set()
        try:
            scheme.shutdown()
        finally:
            for p in procs:
                p.join(timeout=30)
                if p.is_alive():
                    p.kill()
                    p.join(timeout=5)
            for ours, _ in pipes:
                ours.close()


# ---- the run ------------------------------------------------------------------


def measure_group(pool, device, weights, layout, n, variants, use_queue, use_torchrl, reps, record) -> None:
    """Every system for one model on one device to `n` receivers, floors first."""
    budget, lo, hi = reps
    nbytes = sum(t.numel() * t.element_size() for t in weights.values())
    params = sum(t.numel() for t in weights.values())
    base = dict(device=device, params=params, layout=layout, tensors=len(weights), nbytes=nbytes, receivers=n)
    # The floors are measured next to each group, so that they share its moment's load.
    record(Case(**base, system="copy"), bench_copy(weights, device, budget, lo, hi))
    record(Case(**base, system="pipe"), bench_pipe(pool, n, budget, lo, hi))
    runs = {name: (lambda m=mode, z=zc: bench_weightsync(pool, weights, n, m, z, budget, lo, hi))
            for name, (mode, zc) in variants.items()}
    if use_queue:  # the naive baseline is slow: fewer sends
        runs["queue"] = lambda: (bench_queue(pool, weights, device, n, budget, min(lo, 3),
                                             hi if nbytes < 1e8 else min(hi, 10)), None)
    if use_torchrl and device == "cpu":
        runs["torchrl"] = lambda: (bench_torchrl(pool.ctx, weights, n, budget, lo, hi), None)
    for name, measure in runs.items():
        case = Case(**base, system=name)
        try:
            times, case.fds = measure()
        except Exception as e:  # noqa: BLE001 - one failed case must not end the run
            record(case, error=f"{type(e).__name__}: {e}")
        else:
            record(case, times)


def _json_safe(row: dict) -> dict:
    """NaN (a case that did not run, a throughput that does not apply) becomes null."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "gpu": gpu,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchrl": torchrl_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def argv_shown(args: argparse.Namespace) -> list[str]:
    """The options of this run as typed, --out left out (it says where, not what)."""
    out = ["--quick"] if args.quick else []
    for name in ("sizes", "receivers", "layouts", "systems", "budget", "max_reps", "threads"):
        value = getattr(args, name)
        if value is not None and not (name == "threads" and value == 1):
            out.append(f"--{name.replace('_', '-')} {value}")
    return out


def _fmt_params(p: float) -> str:
    """1000 -> 1e3, 2000000 -> 2e6; small counts as they are."""
    if p < 100:
        return str(int(p))
    mantissa, exponent = f"{p:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def run(args: argparse.Namespace) -> int:
    cfg = dict(QUICK if args.quick else FULL)
    if args.sizes:
        cfg["sizes"] = tuple(float(s) for s in args.sizes.split(","))
    if args.receivers:
        cfg["receivers"] = tuple(int(r) for r in args.receivers.split(","))
    if args.budget is not None:
        cfg["budget"] = args.budget
    if args.max_reps is not None:
        cfg["max_reps"] = args.max_reps
        cfg["min_reps"] = min(cfg["min_reps"], args.max_reps)
    systems = [s.strip() for s in args.systems.split(",")] if args.systems else None
    unknown = sorted(set(systems or ()) - set(COLUMNS)) + sorted(
        set(args.layouts.split(",") if args.layouts else ()) - set(LAYOUTS))
    if unknown:
        print(f"unknown system or layout: {unknown}; systems are {COLUMNS}, layouts {list(LAYOUTS)}", file=sys.stderr)
        return 2
    variants = {k: v for k, v in VARIANTS.items() if systems is None or k in systems}
    layouts = {k: v for k, v in LAYOUTS.items() if not args.layouts or k in args.layouts.split(",")}
    use_queue = systems is None or "queue" in systems
    use_torchrl = (systems is None or "torchrl" in systems) and torchrl_version() is not None
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    cuda_ok = cuda_supported()
    budget, lo, hi = cfg["budget"], cfg["min_reps"], cfg["max_reps"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = machine()
    info["sender_threads"] = args.threads
    groups = len(cfg["sizes"]) * len(layouts) * len(cfg["receivers"])
    per_group = {"cpu": 2 + len(variants) + use_queue + use_torchrl,
                 "cuda": 2 + len(variants) + (use_queue if cuda_ok else 0)}
    total = groups * sum(per_group[d] for d in devices)
    print(f"weightsync bench: {info['cpu']}, {info['cores']} cores, torch {info['torch']}, "
          f"torchrl {info['torchrl'] or 'not installed'}; {total} cases{' (quick)' if args.quick else ''}", flush=True)

    # A parallel copy waits for every OpenMP thread; on a machine whose cores the receivers
    # keep busy, one descheduled thread costs a scheduler quantum (ms) and the figure
    # measures the scheduler. One thread per process is the default for that reason.
    torch.set_num_threads(args.threads)
    ctx = mp.get_context("spawn")
    t_start = time.perf_counter()
    pool = Pool(max(cfg["receivers"]), ctx)
    print(f"started {len(pool.procs)} worker processes in {time.perf_counter() - t_start:.1f} s", flush=True)
    cases: list[Case] = []
    done = [0]

    def record(case: Case, times=None, error: str = "") -> None:
        done[0] += 1
        if times:
            _fill(case, times)
        if error:
            case.note = error
        cases.append(case)
        what = f"{_fmt_params(case.params)} params x {case.tensors} tensors, {case.receivers} receivers, {case.device}"
        if error:
            result = f"FAILED: {error}"
        else:
            result = f"p50 {case.p50 * 1e3:9.3f} ms  p90 {case.p90 * 1e3:9.3f} ms  ({case.reps} sends)"
        print(f"[{done[0]:3d}/{total}] {what:<44} {case.system:<26} {result}", flush=True)

    try:
        for device in devices:
            for p in cfg["sizes"]:
                for lay, nt in layouts.items():
                    if device != "cpu" and not cuda_ok:  # the rows say so rather than vanish
                        for n in cfg["receivers"]:
                            for system in ["copy", "pipe", *variants]:
                                record(Case(device, int(p), lay, nt, int(p) * 4, n, system),
                                       error="this binding has no CUDA slots")
                        continue
                    weights = make_weights(int(p), nt, device)
                    for n in cfg["receivers"]:
                        measure_group(pool, device, weights, lay, n, variants, use_queue, use_torchrl,
                                      (budget, lo, hi), record)
                    del weights
    except KeyboardInterrupt:
        print("interrupted: writing what was measured", file=sys.stderr)
    finally:
        pool.close()
    elapsed = time.perf_counter() - t_start
    results = {
        "machine": info,
        "config": {**{k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()}, "quick": bool(args.quick),
                   "layouts": layouts, "systems": ["copy", "pipe", *variants, *(["queue"] if use_queue else []),
                                                   *(["torchrl"] if use_torchrl else [])]},
        "command": " ".join(["python -m weightsync bench", *argv_shown(args)]),
        "elapsed_s": round(elapsed, 1),
        "cases": [_json_safe({**asdict(c), "throughput": c.throughput}) for c in cases],
        "targets": targets(cases),
    }
    (out / "results.json").write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    plots = plot(cases, out)
    (out / "results.md").write_text(markdown(results, plots))
    print(f"done in {elapsed:.0f} s; wrote {out / 'results.md'}, {out / 'results.json'} and {len(plots)} plots")
    for t in results["targets"]:
        print(f"  target {t['name']}: {t['value']} (limit {t['limit']}) {t['verdict']}")
    return 0


# ---- report -------------------------------------------------------------------


def _lookup(cases):
    return {(c.device, c.params, c.layout, c.receivers, c.system): c for c in cases if c.p50 == c.p50}


def best_weightsync(idx, key) -> Case | None:
    found = [idx[(*key, s)] for s in VARIANTS if (*key, s) in idx]
    return min(found, key=lambda c: c.p50) if found else None


def targets(cases: list[Case]) -> list[dict]:
    """The issue's targets, each from figures of this run; n/a when the run lacks a case."""
    idx = _lookup(cases)
    out = []

    def add(name, value, limit, detail):
        verdict = "n/a" if value is None else ("met" if value <= limit else "missed")
        out.append({"name": name, "value": None if value is None else round(value, 3), "limit": limit,
                    "verdict": verdict, "detail": detail})

    cpu = [c for c in cases if c.device == "cpu"]
    sizes = sorted({c.params for c in cpu})
    recv = sorted({c.receivers for c in cpu})
    small = sizes[0] if sizes and sizes[0] <= 10_000 else None
    worst = None
    for n in recv:
        ws = best_weightsync(idx, ("cpu", small, "few", n))
        pipe = idx.get(("cpu", small, "few", n, "pipe"))
        if ws and pipe:
            r = ws.p50 / pipe.p50
            if worst is None or r > worst[0]:
                worst = (r, n, ws.system)
    add(f"small model ({_fmt_params(small) if small else '-'} params) send p50 / pipe round trip",
        worst and worst[0], 2.0, worst and f"worst over receivers: {worst[1]} receivers, {worst[2]}")
    large = sizes[-1] if sizes else None
    n = 4 if 4 in recv else (recv[-1] if recv else None)
    key = ("cpu", large, "few", n)
    ws, copy, pipe = best_weightsync(idx, key), idx.get((*key, "copy")), idx.get((*key, "pipe"))
    add(f"large model ({_fmt_params(large) if large else '-'} params, {n} receivers) send p50 / (copy + pipe)",
        ws and copy and pipe and ws.p50 / (copy.p50 + pipe.p50), 1.15, ws and ws.system)
    few_many = None
    target_size = 1_000_000 if 1_000_000 in sizes else None
    for n in recv:
        for s in VARIANTS:
            a, b = idx.get(("cpu", target_size, "many", n, s)), idx.get(("cpu", target_size, "few", n, s))
            if a and b and (few_many is None or a.p50 / b.p50 > few_many[0]):
                few_many = (a.p50 / b.p50, n, s)
    add("1e6 params: 500 tensors / 6 tensors, send p50", few_many and few_many[0], 1.5,
        few_many and f"worst: {few_many[1]} receivers, {few_many[2]}")
    fds = [c.fds for c in cpu if c.tensors == 500 and c.receivers == 4 and c.fds is not None]
    add("descriptors the sender holds (500 tensors, 4 receivers)", max(fds) if fds else None, 20,
        "max over sizes and variants, counted in /proc/self/fd")
    return out


COLUMNS = ["copy", "pipe", *VARIANTS, "queue", "torchrl"]


def _ms(c: Case | None) -> str:
    if c is None:
        return "-"
    return f"{c.p50 * 1e3:.3f}" if c.p50 < 1 else f"{c.p50 * 1e3:.0f}"


def markdown(results: dict, plots: list[str]) -> str:
    m = results["machine"]
    cases = [Case(**{k: (math.nan if v is None and k in ("p50", "p90") else v)
                     for k, v in c.items() if k != "throughput"}) for c in results["cases"]]
    idx = _lookup(cases)
    failed = [c for c in cases if c.note]
    lines = [
        "# weightsync benchmark results",
        "",
        "<!-- --8<-- [start:tables] -->",
        f"Machine: {m['cpu']}, {m['cores']} cores, GPU {m['gpu'] or 'none'}; {m['os']}; Python {m['python']}, "
        f"torch {m['torch']}, torchrl {m['torchrl'] or 'not installed'}; torch threads: sender "
        f"{m.get('sender_threads', '?')}, receivers 1. Run {m['date']}: "
        f"`{results['command']}`, {results['elapsed_s']:.0f} s.",
        "",
        "### Targets",
        "",
        "| Target | Value | Limit | Verdict | Detail |",
        "|---|---|---|---|---|",
    ]
    for t in results["targets"]:
        lines.append(f"| {t['name']} | {t['value'] if t['value'] is not None else '-'} | {t['limit']} | "
                     f"{t['verdict']} | {t['detail'] or ''} |")
    present = [s for s in COLUMNS if any(c.system == s for c in cases)]
    ws_cols = [s for s in VARIANTS if s in present]
    for device in sorted({c.device for c in cases}):
        keys = sorted({(c.params, c.layout, c.receivers) for c in cases if c.device == device},
                      key=lambda k: (k[1], k[0], k[2]))
        lines += ["", f"### Send latency p50, {device} (ms)", "",
                  "| params | tensors | receivers | " + " | ".join(present) + " |",
                  "|---:|---:|---:|" + "---:|" * len(present)]
        for p, lay, n in keys:
            row = [_ms(idx.get((device, p, lay, n, s))) for s in present]
            lines.append(f"| {_fmt_params(p)} | {LAYOUTS.get(lay, lay)} | {n} | " + " | ".join(row) + " |")
        lines += ["", f"### Ratios, {device}", "",
                  "Each weightsync p50 over its floors; `queue/ws` and `torchrl/ws` are a baseline's p50 over "
                  "the fastest weightsync variant (above 1: weightsync is faster). Throughput is bytes delivered "
                  "per second (model bytes x receivers / p50) of the fastest variant.", "",
                  "| params | tensors | receivers | " + " | ".join(f"{s.removeprefix('weightsync ')} / pipe" for s in ws_cols)
                  + " | " + " | ".join(f"{s.removeprefix('weightsync ')} / (copy+pipe)" for s in ws_cols)
                  + " | queue / ws | torchrl / ws | GB/s |",
                  "|---:|---:|---:|" + "---:|" * (2 * len(ws_cols) + 3)]
        for p, lay, n in keys:
            k = (device, p, lay, n)
            pipe, copy, best = idx.get((*k, "pipe")), idx.get((*k, "copy")), best_weightsync(idx, k)
            r1 = [f"{idx[(*k, s)].p50 / pipe.p50:.2f}" if pipe and (*k, s) in idx else "-" for s in ws_cols]
            r2 = [f"{idx[(*k, s)].p50 / (pipe.p50 + copy.p50):.2f}" if pipe and copy and (*k, s) in idx else "-"
                  for s in ws_cols]
            rq = [f"{idx[(*k, b)].p50 / best.p50:.2f}" if best and (*k, b) in idx else "-" for b in ("queue", "torchrl")]
            gbs = f"{best.throughput / 1e9:.2f}" if best else "-"
            lines.append(f"| {_fmt_params(p)} | {LAYOUTS.get(lay, lay)} | {n} | " + " | ".join(r1 + r2 + rq) + f" | {gbs} |")
    if failed:
        lines += ["", "### Cases that did not run", ""]
        lines += [f"- {c.device} {_fmt_params(c.params)} params x {c.tensors} tensors, {c.receivers} receivers, "
                  f"{c.system}: {c.note}" for c in failed]
    lines.append("<!-- --8<-- [end:tables] -->")
    if plots:
        lines += ["", "### Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def plot(cases: list[Case], out: Path) -> list[str]:
    """One PNG per (device, layout): latency vs size, log-log, one panel per receiver count."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots (pip install 'weightsync[bench]')", file=sys.stderr)
        return []
    names = []
    good = [c for c in cases if c.p50 == c.p50]
    for device in sorted({c.device for c in good}):
        for lay in sorted({c.layout for c in good if c.device == device}):
            sub = [c for c in good if c.device == device and c.layout == lay]
            recv = sorted({c.receivers for c in sub})
            fig, axes = plt.subplots(1, len(recv), figsize=(4 * len(recv), 3.6), sharey=True, squeeze=False)
            for ax, n in zip(axes[0], recv):
                for system in COLUMNS:
                    pts = sorted((c.params, c.p50 * 1e3) for c in sub if c.receivers == n and c.system == system)
                    if pts:
                        style = "--" if system in ("copy", "pipe") else "-"
                        ax.plot(*zip(*pts), style, marker="o", markersize=3, label=system)
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{n} receiver{'s' if n > 1 else ''}")
                ax.set_xlabel("parameters (float32)")
                ax.grid(True, which="major", alpha=0.3)
            axes[0][0].set_ylabel("send latency p50 (ms)")
            axes[0][-1].legend(fontsize=7)
            fig.suptitle(f"{device}, {LAYOUTS.get(lay, lay)} tensors per model")
            fig.tight_layout()
            name = f"latency-{device}-{lay}.png"
            fig.savefig(out / name, dpi=110)
            plt.close(fig)
            names.append(name)
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="a run of about a minute: fewer sizes, receivers and sends")
    parser.add_argument("--out", default="bench-results", help="directory for results.md, results.json and plots")
    parser.add_argument("--sizes", help="comma-separated parameter counts, e.g. 1e3,1e6 (default: 1e3..1e8)")
    parser.add_argument("--receivers", help="comma-separated receiver counts (default: 1,2,4,8)")
    parser.add_argument("--layouts", help="few (6 tensors), many (500 tensors) or both (default)")
    parser.add_argument("--systems", help="comma-separated subset of: " + ", ".join(["copy", "pipe", *VARIANTS, "queue", "torchrl"])
                        + " (copy and pipe always run)")
    parser.add_argument("--budget", type=float, help="seconds of timed sends per case (default 1.5, quick 0.25)")
    parser.add_argument("--max-reps", type=int, help="most timed sends per case")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads of the sending process (default 1; receivers use 1)")
