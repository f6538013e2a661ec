"""The capability sweep: the suite against the reference with one capability taken away, for each capability.

    python conformance/tools/lacking.py [CAPABILITY ...] [--out DIR] [-- PYTEST-ARGS]

For each capability X it writes a shim module (`lacking_X.py`): the reference, with X left out of CAPABILITIES
and every use of X raising NotImplementedError. It then runs the suite against that shim. A test that uses X
without saying so (`needs`) reaches the missing feature and ends violated or inconclusive; a fair suite
reports every test that needs X *not implemented* and nothing violated or inconclusive. That is how each test's
`needs` is derived rather than trusted: the shim, not the test's author, says what a test touched.

Prints one line per capability (exit status, counts, the tests that touched X unannounced) and exits 1 if any
run found one. A run of the whole suite per capability: minutes each (release checks, not CI).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: What each capability guards in the reference, as the shim's checks (API-5's table).
GUARDS = {
    "push": "receiver(mode == 'push')",
    "pull": "receiver(mode == 'pull')",
    "module": "sender(isinstance(weights, torch.nn.Module)); receiver(isinstance(target, torch.nn.Module))",
    "tensordict": "sender(_is_td(weights)); receiver(_is_td(target))",
    "mapping": "receiver(target is not None and not _is_td(target) and not isinstance(target, torch.nn.Module))",
    "zero_copy": "receiver(zero_copy)",
    "rendezvous": "sender(listen is not None); receiver(isinstance(handle, str)); method('url')",
    "network": "sender(isinstance(listen, str) and listen.startswith('tcp'))",
    "pack": "function('pack')",
    "hooks": "receiver(on_apply is not None); future('add_done_callback', '__await__'); future_property('figures')",
    "cast": "sender(dtypes is not None)",
    "wire": "wrap_handles()",
    "drop": "method('drop')",
}
SHIM = '''\
"""The reference without the capability {cap!r} (conformance/tools/lacking.py)."""
import inspect

import torch

import weightsync as _ws
from weightsync import *  # noqa: F403

CAPABILITIES = _ws.CAPABILITIES - {{{cap!r}}}
_WHY = "capability {cap!r} is not implemented here (a shim of the capability sweep)"


def _missing(what):
    raise NotImplementedError(f"{{what}}: {{_WHY}}")


def _is_td(x):
    return hasattr(x, "batch_size") and hasattr(x, "keys")


_checks = {{"sender": [], "receiver": []}}


def sender(cond):
    _checks["sender"].append(cond)


def receiver(cond):
    _checks["receiver"].append(cond)


def _unpacked(target):
    """What a packed target holds (pack() keeps the caller's object as `.source`): its kind is the target's."""
    return target.source if type(target).__name__ == "Packed" else target


class Sender(_ws.Sender):
    def __init__(self, weights, num_workers, *args, listen=None, dtypes=None, **kwargs):
        for ok in _checks["sender"]:
            if ok(weights=weights, listen=listen, dtypes=dtypes):
                _missing("Sender(...)")
        if listen is not None:
            kwargs["listen"] = listen
        if dtypes is not None:
            kwargs["dtypes"] = dtypes
        super().__init__(weights, num_workers, *args, **kwargs)


class _Handle:
    """A handle whose channel is not a wire-profile socket to the outside: fileno() is missing."""

    def __init__(self, inner):
        self.inner = inner

    def fileno(self):
        _missing("handle.fileno()")

    def __reduce__(self):
        return (_Handle, (self.inner,))


_wrap = [False]


class Receiver(_ws.Receiver):
    def __init__(self, handle, target=None, *, mode="push", zero_copy=False, on_apply=None, **kwargs):
        if isinstance(handle, _Handle):
            handle = handle.inner
        for ok in _checks["receiver"]:
            if ok(handle=handle, target=_unpacked(target), mode=mode, zero_copy=zero_copy, on_apply=on_apply):
                _missing("Receiver(...)")
        if on_apply is not None:
            kwargs["on_apply"] = on_apply
        super().__init__(handle, target, mode=mode, zero_copy=zero_copy, **kwargs)


# The binding's signatures, as the suite reads them (API-1, API-3): the checks above wrap, they do not change them.
Sender.__signature__ = inspect.signature(_ws.Sender)
Receiver.__signature__ = inspect.signature(_ws.Receiver)


def method(name):
    setattr(Sender, name, lambda self, *a, **k: _missing(f"sender.{{name}}()"))


def function(name):
    globals()[name] = lambda *a, **k: _missing(f"{{name}}()")


def future(*names):
    from weightsync import future as _future
    for name in names:
        setattr(_future.SendFuture, name, lambda self, *a, n=name, **k: _missing(f"future.{{n}}"))


def future_property(name):
    from weightsync import future as _future
    setattr(_future.SendFuture, name, property(lambda self: _missing(f"future.{{name}}")))


def wrap_handles():
    base = Sender.handle
    Sender.handle = lambda self, i: _Handle(base(self, i))


{guards}
'''


def _guards(cap: str) -> str:
    """The guard calls of one capability as module-level statements of the shim (checks as lambdas)."""
    out = []
    for call in GUARDS[cap].split("; "):
        kind, _, arg = call.partition("(")
        arg = arg[:-1]
        if kind in ("sender", "receiver"):
            params = "weights=None, listen=None, dtypes=None" if kind == "sender" else \
                "handle=None, target=None, mode=None, zero_copy=None, on_apply=None"
            out.append(f"{kind}(lambda {params}: {arg})")
        else:
            out.append(f"{kind}({arg})")
    return "\n".join(out)


def write_shim(cap: str, folder: Path) -> str:
    name = f"lacking_{cap}"
    (folder / f"{name}.py").write_text(SHIM.format(cap=cap, guards=_guards(cap)))
    return name


def sweep_one(cap: str, folder: Path, out: Path, extra: list[str]) -> dict:
    name = write_shim(cap, folder)
    report = out / f"{name}.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), str(ROOT / "reference"), str(ROOT)]))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "conformance", f"--impl={name}", "-q", "-p",
                           "no:cacheprovider", f"--conformance-json={report}", *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    (out / f"{name}.log").write_text(proc.stdout + proc.stderr)
    data = json.loads(report.read_text()) if report.exists() else {"tests": {}}
    counts: dict[str, int] = {}
    for t in data["tests"].values():
        counts[t["outcome"]] = counts.get(t["outcome"], 0) + 1
    touched = sorted(n for n, t in data["tests"].items() if t["outcome"] in ("violated", "inconclusive"))
    return {"capability": cap, "exit": proc.returncode, "seconds": round(time.monotonic() - t0), "counts": counts,
            "unannounced": touched}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("capabilities", nargs="*", default=sorted(GUARDS), help="default: every one")
    p.add_argument("--out", default=None, help="where the shims' logs and JSON reports go (default: a temp dir)")
    args = p.parse_args(argv)
    unknown = sorted(set(args.capabilities) - set(GUARDS))
    if unknown:
        p.error(f"unknown capabilities {unknown}; known: {sorted(GUARDS)}")
    out = Path(args.out or tempfile.mkdtemp(prefix="lacking-"))
    out.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="lacking-shims-"))
    bad = 0
    for cap in args.capabilities:
        r = sweep_one(cap, folder, out, extra)
        bad += bool(r["unannounced"]) or r["exit"] not in (0, 6)
        print(textwrap.shorten(json.dumps(r), 2000), flush=True)
    print(f"reports in {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
