"""Facts about the GPU machine that the CUDA path relies on, printed one per line (run by tests/gpu_checks.sh)."""

from __future__ import annotations

import os
import subprocess
import sys

import torch


def fact(name, fn):
    try:
        print(f"{name}: {fn()}", flush=True)
    except Exception as e:  # noqa: BLE001 - a probe reports what failed
        print(f"{name}: FAILED {type(e).__name__}: {e}", flush=True)


def main() -> None:
    fact("torch", lambda: torch.__version__)
    fact("devices", lambda: [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
    fact("uuid", lambda: str(torch.cuda.get_device_properties(0).uuid))
    fact("CUDA_VISIBLE_DEVICES", lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
    fact("alloc conf", lambda: os.environ.get("PYTORCH_CUDA_ALLOC_CONF"))
    a = torch.zeros(4096, dtype=torch.uint8, device="cuda")
    b = torch.zeros(4096, dtype=torch.uint8, device="cuda")
    sa, sb = a.untyped_storage()._share_cuda_(), b.untyped_storage()._share_cuda_()
    fact("share fields", lambda: len(sa))
    fact("two small storages share one IPC handle", lambda: sa[1] == sb[1])
    fact("their offsets", lambda: (sa[3], sb[3]))
    ev = torch.cuda.Event(interprocess=True)
    ev.record()
    fact("event handle bytes", lambda: len(ev.ipc_handle()))
    fact("cuda ipc_collect", lambda: (torch.cuda.ipc_collect(), "ok")[1])
    if "--child" not in sys.argv:
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
        out = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, timeout=60)
        print("--- with expandable_segments:True ---\n" + out.stdout + out.stderr[-2000:], flush=True)


if __name__ == "__main__":
    main()
