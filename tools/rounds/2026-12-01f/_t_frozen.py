"""For the t_ confirm scripts: a TCP worker in a process of its own (spawn), to freeze with SIGSTOP."""
import multiprocessing as mp
import os
import signal
import sys
import time


def worker(modname, url, ready, extra_path):
    sys.path[:0] = extra_path
    import importlib

    ws = importlib.import_module(modname)
    r = ws.Receiver(url, mode="pull")
    r.connect(timeout=30)
    ready.set()
    while not r.stopped:
        r.poll(0.2)
    time.sleep(60)


def start(modname, url):
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    p = ctx.Process(target=worker, args=(modname, url, ready, list(sys.path)), daemon=True)
    p.start()
    return p, ready


def freeze(p):
    os.kill(p.pid, signal.SIGSTOP)


def kill(p):
    try:
        os.kill(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.join(5)
