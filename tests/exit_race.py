"""Run by tests/test_listener_thread.py: a listening sender closes itself from its helper thread once its
receiver is gone (as weightsync.torchrl's does) while the main thread returns; the helper's close first runs
a torch op of a few seconds, which releases the GIL, so the interpreter finalizes around it."""

import threading
import time

import torch
import torch.multiprocessing as mp

from weightsync import Receiver, Sender
from weightsync import sender as sender_module


def worker(url):
    r = Receiver(url)
    r.connect(30)
    r.close()

if __name__ == "__main__":
    torch.set_num_threads(1)
    started = threading.Event()
    big = torch.ones(3000, 3000)
    close = Sender.close

    def slow_close(self):
        if threading.current_thread() is not threading.main_thread():
            started.set()
            for _ in range(3):
                big.mm(big)  # a torch op that releases the GIL, a few hundred ms
        close(self)

    Sender.close = slow_close
    s = Sender({"w": torch.zeros(4)}, 1, listen=f"unix:@weightsync-exit-race-{time.time_ns()}")
    sender_module.close_when_all_gone(s)
    p = mp.get_context("spawn").Process(target=worker, args=(s.url(0),))
    p.start()
    s.connect(30)
    p.join(30)
    print("helper closing:", started.wait(30), flush=True)
    # the main thread returns now, while the helper thread is inside its torch op
