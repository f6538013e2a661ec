"""A scripted sender (joined by URL) sends an Init naming a capability no 1.1 peer knows; the receiver's Ready
must not announce it back (WIRE-6: Ready names the capabilities it shares, a subset of Init's it knows)."""

import _confirm
import f_helpers

if __name__ == "__main__":
    ws = _confirm.module()
    lis = f_helpers.ScriptedListener("unix", timeout=15)
    r = ws.Receiver(lis.url(0))
    out, t = _confirm.in_thread(r.connect, 15)
    c = lis.accept_join()
    init, fds = f_helpers.unix_init(c.rid, [1.0, 2.0, 3.0, 4.0], version=3,
                                    capabilities=["x-weightsync-future-compress"])
    c.send(init, fds)
    ready = c.read_until("Ready")
    t.join(10)
    if ready.get("status") != "ok":
        _confirm.fine(f"(refused the Init: {ready.get('detail')!r})")  # not expected, but announces nothing
    caps = ready.get("capabilities", [])
    if "x-weightsync-future-compress" in caps:
        _confirm.bug(f"Ready(ok) announced {caps!r}: a capability of the Init the receiver does not implement")
    if not set(caps) <= {"network"}:
        _confirm.bug(f"Ready(ok) announced {caps!r}")
    _confirm.fine(f"Ready(ok, version {ready.get('version')}) announced {caps!r}; connect -> {out}")
