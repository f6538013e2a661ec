"""Default start method spawn, a worker forked by os.fork(): Receiver(handle) refuses, naming CON-2."""
import multiprocessing as mp
import os

import torch
from _confirm import bug, fine, module

if __name__ == "__main__":
    ws = module()
    mp.set_start_method("spawn")  # the trainer's default
    s = ws.Sender({"w": torch.zeros(4)}, 1)
    h = s.handle(0)
    pid = os.fork()
    if pid == 0:  # the forked worker: its handle came with its parent's memory
        try:
            ws.Receiver(h)
        except ws.LocalProtocolError as e:
            os._exit(0 if "CON-2" in str(e) else 2)
        except BaseException:  # noqa: BLE001
            os._exit(3)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        fine("the forked worker's Receiver(handle) raised LocalProtocolError naming CON-2")
    if code == 1:
        bug("Receiver(handle) accepted a handle inherited by fork")
    bug(f"unexpected child exit code {code}")
