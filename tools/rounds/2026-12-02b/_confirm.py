"""Shared bits of the confirm scripts: the module under test from argv, verdicts, in-process receivers."""
import importlib
import os
import sys
import threading


def module():
    return importlib.import_module(sys.argv[1] if len(sys.argv) > 1 else "weightsync")


def _exit(code):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def bug(text):
    print("BUG SEEN:", text)
    _exit(1)


def fine(text="as the spec says"):
    print("ok:", text)
    _exit(0)


def in_thread(fn, *args, **kwargs):
    out = {}

    def run():
        try:
            out["result"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return out, t


def connect_inproc(sender, receivers, workers=None, timeout=20):
    """Receivers made in this process (before sender.connect()) connect in threads while the sender connects."""
    outs = [in_thread(r.connect, timeout) for r in receivers]
    sender.connect(timeout=timeout, workers=workers)
    for out, t in outs:
        t.join(timeout)
        if "error" in out:
            raise out["error"]
