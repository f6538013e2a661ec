"""A scripted sender (joined by URL) sends the first bytes of a Receive frame and nothing more: a push receiver
must treat it as a violation after 10 s (WIRE-7) and stop; checked 14 s after the first byte."""
import struct
import time

import _confirm
import f_helpers
import msgpack

if __name__ == "__main__":
    ws = _confirm.module()
    lis = f_helpers.ScriptedListener("unix", timeout=15)
    r = ws.Receiver(lis.url(0))
    out, t = _confirm.in_thread(r.connect, 15)
    c = lis.accept_join()
    init, fds = f_helpers.unix_init(c.rid, [1.0, 2.0, 3.0, 4.0], version=0)
    c.send(init, fds)
    ready = c.read_until("Ready")
    t.join(10)
    assert ready.get("status") == "ok" and out.get("result") == 0, (ready, out)
    payload = msgpack.packb({"type": "Receive", "version": 1, "slot": 0, "new_slots": []})
    whole = struct.pack(">I", len(payload)) + payload
    c.send_raw(whole[:10])  # the length and a few bytes of the map; the rest never comes
    start = time.monotonic()
    while time.monotonic() - start < 14.0:
        if r.stopped:
            break
        time.sleep(0.2)
    waited = time.monotonic() - start
    if not r.stopped:
        _confirm.bug(f"{waited:.1f} s after a frame's first bytes the receiver is still live (stopped False, "
                     f"failure {r.failure!r})")
    if waited < 9.5:
        _confirm.bug(f"the receiver gave up on the frame after {waited:.1f} s, before WIRE-7's 10 s")
    _confirm.fine(f"stopped {waited:.1f} s after the partial frame: {r.failure!r:.160}")
