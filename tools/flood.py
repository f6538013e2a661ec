"""Send latency to one receiver while another floods its channel with Heartbeats (SEC-8), next to the same
without the flood. The flooder writes from a forked process, so it costs the sender's process nothing.

    PYTHONPATH=reference:. python tools/flood.py
"""

import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import weightsync as ws  # noqa: E402
from conformance.peers import HEARTBEAT, ScriptedReceiver, frame, pack  # noqa: E402


def run(flood: bool, seconds=3.0):
    s = ws.Sender({"w": torch.zeros(1000)}, 2)
    good = ws.Receiver(s.handle(0))
    bad = ScriptedReceiver(s.handle(1), 1)
    with ThreadPoolExecutor(2) as ex:
        f1 = ex.submit(good.connect, 10)
        f2 = ex.submit(bad.handshake)
        s.connect(10)
        f1.result()
        f2.result()
    hb = frame(pack(HEARTBEAT)) * 64
    pid = None
    if flood:
        pid = os.fork()
        if pid == 0:
            try:
                while True:
                    bad.sock.sendall(hb)
            finally:
                os._exit(0)
    times = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        s.send(workers=[0], timeout=10)
        times.append(time.perf_counter() - t0)
    if pid:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    s.close()
    good.close()
    return statistics.median(times) * 1e3, sorted(times)[int(0.9 * len(times))] * 1e3, len(times)


if __name__ == "__main__":
    quiet, flood = run(False), run(True)
    print("quiet  p50 {:.3f} ms  p90 {:.3f} ms  ({} sends)".format(*quiet))
    print("flood  p50 {:.3f} ms  p90 {:.3f} ms  ({} sends)".format(*flood))
    print(f"flooded / quiet p50: {flood[0] / quiet[0]:.2f}")
