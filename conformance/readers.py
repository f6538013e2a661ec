"""The worker server's commands that read the receiver's weights from other threads.

Reader threads that read continuously inside reading() (CONS-1, CONS-2), a holder
that stays inside reading() until released (SLOT-2, ACK-3), and the one-shot reads
that inspect the weights: their mapping (API-3), devices (CUDA-1), zero-copy views
(ZC-3, LAYOUT-*). A mixin of `server.Server`, which owns `rx`, `ws` and `torch`; the
threads it starts are stopped by `_stop_threads` before the receiver is closed.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping

from . import timing as tm
from .remote import describe_error


class ReaderCommands:
    """The reader and holder threads of one worker, and the commands that use reading()."""

    def _init_threads(self) -> None:
        self.readers: list[threading.Thread] = []
        self.reader_stop = threading.Event()
        self.observed: dict = {}
        self.reader_errors: list[str] = []
        self.reads = 0
        self.holder: threading.Thread | None = None
        self.hold_release = threading.Event()

    def _stop_threads(self) -> None:
        self.reader_stop.set()
        self.hold_release.set()
        for t in (*self.readers, self.holder):
            if t is not None:
                t.join(tm.BOUND)
        self.holder = None
        self.readers = []

    def do_reader_start(self, threads=1, pause=0.0005):
        """Read continuously inside reading(), fingerprinting what each read sees (CONS-1).

        With several threads and no pause the reads overlap, so some reader is
        always inside reading(): an apply must still get in (CONS-2).
        """
        from .model import describe, digest

        self.observed, self.reader_errors, self.reads = {}, [], 0
        self.reader_stop.clear()

        def loop():
            while not self.reader_stop.is_set():
                try:
                    with self.rx.reading():
                        v = self.rx.version
                        d = digest(describe(self.rx.weights))
                        v2 = self.rx.version
                    self.observed.setdefault((v, d), 0)
                    self.observed[(v, d)] += 1
                    if v != v2:
                        self.reader_errors.append(f"version changed inside reading(): {v} -> {v2}")
                    self.reads += 1
                except Exception as e:  # noqa: BLE001
                    self.reader_errors.append(f"{type(e).__name__}: {e}")
                    return
                time.sleep(pause)

        self.readers = [threading.Thread(target=loop, name="conformance-reader", daemon=True) for _ in range(threads)]
        for t in self.readers:
            t.start()
        return None

    def do_reader_stop(self):
        self.reader_stop.set()
        for t in self.readers:
            t.join(tm.BOUND)
            if t.is_alive():
                self.reader_errors.append(f"reader still blocked in reading() after {tm.BOUND} s")
        self.readers = []
        return {"observed": list(self.observed.items()), "errors": list(self.reader_errors), "reads": self.reads}

    def do_hold(self, seconds=None):
        """Enter reading() in a thread and stay there until release, or for `seconds` (CONS-2).

        Returns the version held on entering: applies of versions sent before the hold may have
        finished (and been acked) before it, which the caller's model must know.

        On release the thread leaves reading() and enters it again at once, so
        `release(snapshot=True)` returns the first state a reader can see after
        the applies that waited for the hold (SLOT-2, ACK-3).
        """
        entered = threading.Event()
        self.hold_release.clear()
        self.after_hold = self.held = self.entered_at = None

        def hold():
            from .model import describe, digest

            with self.rx.reading():
                with self.rx.reading():  # a nested block ends first: the outer one still holds (CONS-2)
                    before = (self.rx.version, digest(describe(self.rx.weights)))
                self.entered_at = before
                entered.set()
                self.hold_release.wait(tm.BOUND * 4 if seconds is None else seconds)
                self.held = (before, (self.rx.version, digest(describe(self.rx.weights))))
            try:
                with self.rx.reading():
                    self.after_hold = ("ok", (self.rx.version, describe(self.rx.weights)))
            except Exception as e:  # noqa: BLE001
                self.after_hold = ("err", describe_error(self.ws, e))

        self.holder = threading.Thread(target=hold, name="conformance-holder", daemon=True)
        self.holder.start()
        if not entered.wait(tm.BOUND):
            raise TimeoutError("reading() did not open within the bound")
        return self.entered_at[0] if self.entered_at is not None else None

    def do_held(self):
        """What the last hold saw on entering and on leaving its reading() block (CONS-1)."""
        if self.holder is not None:
            self.holder.join(tm.BOUND)
        return self.held

    def do_release(self, snapshot=False):
        self.hold_release.set()
        if self.holder is not None:
            self.holder.join(tm.BOUND)
            if self.holder.is_alive():
                raise TimeoutError("the holder could not re-enter reading() within the bound")
        self.holder = None
        if snapshot:
            status, value = self.after_hold
            if status != "ok":
                raise RuntimeError(f"reading after the hold failed: {value}")
            return value
        return None

    def do_bounded_waits(self, timeout, early, slack):
        """API-7 in a pull receiver with a version pending: what poll(timeout) and reading(timeout) do while
        another thread is inside reading().

        poll(timeout) must give up on the version that reader holds back, returning None within its
        timeout; then, while a poll(None) in a second thread waits for that reader, reading(timeout)
        in this thread must raise SyncTimeoutError within its timeout (CONS-2: a waiting apply holds new
        readers back). Whether that poll is waiting yet cannot be seen, so reading() is tried until it
        waits (or the bound passes). Returns the outcomes; the reader then leaves.
        """
        entered, release = threading.Event(), threading.Event()

        def hold():
            with self.rx.reading():
                entered.set()
                release.wait(tm.BOUND * 2)

        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        out: dict = {}
        polled: dict = {}
        poller = None
        try:
            if not entered.wait(tm.BOUND):
                raise TimeoutError("reading() did not open within the bound")
            # In a thread of its own: a poll that outlives its timeout is told as such, this call still answers.
            first: dict = {}

            def poll_once():
                try:
                    first["v"] = self.rx.poll(timeout)
                except Exception as e:  # noqa: BLE001 - told to the suite, which judges it
                    first["v"] = f"raised {describe_error(self.ws, e)}"

            t0 = time.monotonic()
            polling = threading.Thread(target=poll_once, daemon=True)
            polling.start()
            polling.join(2 * (timeout + slack))
            out["poll_s"] = time.monotonic() - t0
            if polling.is_alive():
                out["poll"] = "still waiting"
                return out
            out["poll"] = first.get("v")
            poller = threading.Thread(target=lambda: polled.update(v=self.rx.poll(tm.BOUND * 2)), daemon=True)
            poller.start()
            out["reading"] = "never waited"
            end = time.monotonic() + tm.BOUND
            while time.monotonic() < end:
                t0 = time.monotonic()
                try:
                    with self.rx.reading(timeout):
                        pass
                except Exception as e:  # noqa: BLE001 - the class is checked by the suite
                    out["reading"], out["reading_s"] = describe_error(self.ws, e), time.monotonic() - t0
                    break
                if time.monotonic() - t0 > timeout + slack:
                    out["reading"], out["reading_s"] = "entered late", time.monotonic() - t0
                    break
                time.sleep(early)
        finally:
            release.set()
            holder.join(tm.BOUND)
            if poller is not None:
                poller.join(tm.BOUND)
        out["then"] = polled.get("v")
        return out

    def do_nested(self):
        """reading() inside reading() in one thread must not deadlock (CONS-2)."""
        out = {}

        def run():
            with self.rx.reading():
                with self.rx.reading():
                    out["v"] = self.rx.version

        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(5.0)
        if t.is_alive():
            raise TimeoutError("nested reading() deadlocked")
        return out["v"]

    def do_poll_inside_reading(self, nested=False):
        """poll() inside reading(); with `nested`, after a nested block inside it has ended (CONS-3)."""
        with self.rx.reading():
            if nested:
                with self.rx.reading():
                    pass
            self.rx.poll(0.0)
        return None

    def do_zc_write(self):
        """Try to write into zero-copy weights (ZC-3): an error or a fault is the expected answer."""
        with self.rx.reading():
            t = next(iter(self.rx.weights.values()))
            with self.torch.no_grad():
                t.view(-1)[:1].fill_(1) if t.numel() else None
        return None

    def do_weights_api(self):
        """The receiver's weights form a read-only mapping of tensors (API-3)."""
        w = self.rx.weights
        out = {"mapping": isinstance(w, Mapping), "tensors": all(isinstance(t, self.torch.Tensor) for t in w.values())}
        try:
            w["__conformance__"] = self.torch.zeros(1)  # type: ignore[index]
            out["read_only"] = False
        except Exception:  # noqa: BLE001
            out["read_only"] = True
        return out

    def do_devices(self):
        """Name -> device of the receiver's weights (CUDA-1)."""
        with self.rx.reading():
            return {n: str(t.device) for n, t in self.rx.weights.items()}

    def do_mapping(self):
        """(device, inode, file offset) of the bytes a zero-copy weight views, from /proc/self/maps;
        None when they are not in a shared file mapping (LAYOUT-2)."""
        with self.rx.reading():
            t = next((t for t in self.rx.weights.values() if t.numel()), None)
            ptr = t.data_ptr() if t is not None else None
        if ptr is None or not os.path.exists("/proc/self/maps"):  # not Linux: copies cannot be told apart
            return None
        with open("/proc/self/maps") as f:
            for line in f:
                fields = line.split()
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                if lo <= ptr < hi:
                    inode = int(fields[4])
                    return None if inode == 0 else (fields[3], inode, int(fields[2], 16) + ptr - lo)
        return None

    def do_alignment(self):
        """Offsets modulo 64 of zero-copy views (LAYOUT-1)."""
        with self.rx.reading():
            return {n: t.data_ptr() % 64 for n, t in self.rx.weights.items() if t.numel()}
