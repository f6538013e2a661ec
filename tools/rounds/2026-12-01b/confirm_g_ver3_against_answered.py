"""A scripted sender names version 2, then version 1, to a pull receiver that has not polled: VER-3 (applied or
not) makes the second a violation: poll() raises RemoteProtocolError and the receiver stops (SM-R-7)."""

import _confirm
import f_helpers as fh

ws = _confirm.module()
lst = fh.ScriptedListener("unix", timeout=15)
r = ws.Receiver(lst.url(0), mode="pull")
out, t = _confirm.in_thread(r.connect, 15)
c = lst.accept_join()
init, fds = fh.unix_init(0, [1.0, 2.0, 3.0], version=0)
c.send(init, fds)
ready = c.read_until("Ready")
assert ready["status"] == "ok", ready
t.join(15)
assert out.get("result") == 0, out
# version 2 in slot 0, then version 1 in slot 0 (the slot's bytes are what they are; VER-3 is about the number)
c.send({"type": "Receive", "version": 2, "slot": 0, "new_slots": []})
c.send({"type": "Receive", "version": 1, "slot": 0, "new_slots": []})
try:
    got = r.poll(timeout=3)
except ws.RemoteProtocolError as e:
    if not r.stopped:
        _confirm.bug(f"poll() raised {e} but the receiver is not stopped")
    _confirm.fine(f"poll() raised RemoteProtocolError ({e.requirement}): {e}")
answers = []
c.sock.settimeout(1.0)
try:
    while True:
        answers.append(c.read())
except Exception:  # noqa: BLE001 - no more answers within 1 s
    pass
_confirm.bug(f"Receive(1) after Receive(2) was accepted: poll() returned {got}, receiver.version {r.version}, "
             f"stopped {r.stopped}; the receiver answered {[(a.get('type'), a.get('version')) for a in answers]}")
