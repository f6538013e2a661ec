"""A scripted receiver (the wire, section 12) takes its Init, answers Ready, then lags: it answers none of the
Receives of four send_async() calls (default max_slots: N+2 = 3 slots). SLOT-2: no slot named by an unanswered
Receive is written, so the fourth send finds no free slot (SyncTimeoutError, nothing published, SLOT-3) and the
slot of Receive(2) still holds version 2's bytes when the receiver reads it."""
import os
import threading

import _confirm
import _wirepeer
import e_helpers as h
import torch

ws = _confirm.module()
sender = ws.Sender(h.weights(0), 1)
peer = _wirepeer.Peer(sender.handle(0), timeout=15)
box = {}


def handshake():
    init = peer.read()
    box["init"] = init
    box["fds"] = dict(zip([s["slot"] for s in init["slots"]], peer.fds))
    peer.fds = []
    peer.send(peer.ready_msg(init))


t = threading.Thread(target=handshake, daemon=True)
t.start()
sender.connect(timeout=15)
t.join(15)
init = box["init"]
fds = box["fds"]
published = {}
refused = None
for k in (1, 2, 3, 4):
    try:
        f = sender.send_async(h.weights(k), timeout=1.0)
        published[f.version] = k
    except ws.SyncTimeoutError as e:
        refused = e
        break
receives = {}
while len(receives) < len(published):
    msg = peer.read()
    if msg.get("type") != "Receive":
        continue
    for s in msg["new_slots"]:
        fds[s["slot"]] = peer.fds.pop(0)
    receives[msg["version"]] = msg["slot"]


def slot_holds(slot, w):
    raw = os.pread(fds[slot], 1 << 20, 0)
    for e in init["manifest"]:
        want = w[e["name"]].contiguous().view(-1).view(torch.uint8).numpy().tobytes()
        if raw[e["offset"]:e["offset"] + e["nbytes"]] != want:
            return False
    return True


v2_slot = receives.get(2)
intact = slot_holds(v2_slot, h.weights(2))
others = dict(receives)
peer.close()
sender.close()
if not intact or refused is None:
    _confirm.bug(f"receiver answered nothing; Receives named slots {others}; fourth send "
                 f"{'refused' if refused else 'published'}; slot {v2_slot} of unanswered Receive(2) "
                 f"{'still holds' if intact else 'no longer holds'} version 2's bytes")
_confirm.fine(f"slots {others} stayed pinned: the fourth send raised SyncTimeoutError naming {refused.workers}; "
              "Receive(2)'s slot holds version 2")
