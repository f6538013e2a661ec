"""Helpers of the d_ confirm scripts: a small sender, and scripted wire receivers (spec section 12)."""
import threading
import time

import _wirepeer
import torch


def weights():
    return {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.zeros(4)}


def target():
    return {"w": torch.zeros(2, 3), "b": torch.zeros(4)}


class Scripted:
    """A receiver on the wire, run in a thread: takes Init, answers Ready (ok or error), then answers
    each Receive as `on_receive(msg)` says: "ok", "error", or None (silence)."""

    def __init__(self, handle, ready="ok", on_receive=lambda msg: "ok", ready_delay=0.0, timeout=30.0):
        self.peer = _wirepeer.Peer(handle, timeout)
        self.ready, self.on_receive, self.ready_delay = ready, on_receive, ready_delay
        self.got = []
        self.error = None
        self.init = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def _run(self):
        try:
            init = self.init = self.peer.read()
            self.got.append(init)
            if init.get("type") != "Init":
                return
            if self.ready_delay:
                time.sleep(self.ready_delay)
            if self.ready is None:
                pass
            elif self.ready == "ok":
                self.peer.send(self.peer.ready_msg(init))
            else:
                self.peer.send(self.peer.ready_msg(init, status="error", version=None, detail=self.ready))
                return
            while True:
                msg = self.peer.read()
                self.got.append(msg)
                if msg.get("type") == "Receive":
                    what = self.on_receive(msg)
                    if what == "ok":
                        self.peer.send({"type": "Ack", "receiver": init["receiver"], "version": msg["version"],
                                        "status": "ok", "detail": ""})
                    elif what == "error":
                        self.peer.send({"type": "Ack", "receiver": init["receiver"], "version": msg["version"],
                                        "status": "error", "detail": "RuntimeError: scripted failure"})
                    elif isinstance(what, dict):
                        self.peer.send(what)
                elif msg.get("type") == "Stop":
                    return
        except BaseException as e:  # noqa: BLE001
            self.error = e

    def close(self):
        try:
            self.peer.close()
        except OSError:
            pass


def wait_until(cond, timeout, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()
