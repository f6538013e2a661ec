"""What a trainer sees when a collector worker is SIGKILLed: TorchRL's SharedMem scheme beside weightsync's.

    python tests/torchrl_killed_worker.py [LIMIT_S]

Two MultiSyncCollector workers on PendulumEnv; after one batch, worker 1 is SIGKILLed
and the trainer calls update_policy_weights_() in a thread given LIMIT_S (default 60) s.
Prints, for each scheme, whether the update returned, raised (and what) or was still
blocked when the limit passed. A measurement for docs/guides/torchrl.md, not a test:
TorchRL's behaviour is TorchRL's to change.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from torchrl.collectors import MultiSyncCollector  # noqa: E402
from torchrl.weight_update import SharedMemWeightSyncScheme  # noqa: E402

from tests.torchrl_parts import make_env, make_policy, set_constant  # noqa: E402
from weightsync.torchrl import WeightsyncScheme  # noqa: E402


def trial(name: str, scheme, limit: float) -> str:
    policy = make_policy()
    set_constant(policy, 0.0)
    col = MultiSyncCollector([make_env] * 2, policy=policy, frames_per_batch=20, total_frames=-1,
                             weight_sync_schemes={"policy": scheme})
    box: dict = {}
    try:
        next(iter(col))
        os.kill(col.procs[1].pid, signal.SIGKILL)
        col.procs[1].join(30)
        set_constant(policy, 5.0)

        def update():
            try:
                col.update_policy_weights_()
                box["out"] = "returned"
            except BaseException as e:  # noqa: BLE001 - what it raises is the measurement
                box["out"] = f"raised {type(e).__name__}: {str(e)[:160]}"

        t0 = time.monotonic()
        t = threading.Thread(target=update, daemon=True)
        t.start()
        t.join(limit)
        took = time.monotonic() - t0
        out = box.get("out", f"still blocked after {limit:.0f} s")
        return f"{name}: update_policy_weights_() {out} ({took:.2f} s)"
    finally:
        if "out" in box:
            col.shutdown()  # a blocked update would block shutdown too; the process exits instead


def main() -> None:
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    print(trial("weightsync WeightsyncScheme(timeout=30)", WeightsyncScheme(timeout=30), limit), flush=True)
    print(trial("torchrl SharedMemWeightSyncScheme()", SharedMemWeightSyncScheme(), limit), flush=True)
    os._exit(0)  # a blocked update thread and orphaned workers must not keep the script alive


if __name__ == "__main__":
    main()
