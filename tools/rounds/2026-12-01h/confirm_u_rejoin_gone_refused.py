"""A listening sender (unix:@NAME); receiver 0 joins by URL in this process and connects, then its worker goes
away (close()); the sender sees it gone (a send raises ReceiverDiedError). A new worker given the same URL must
join and connect (RDV-5): the listener sends its Init at once, with the latest version."""
import os
import uuid

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 1, listen=f"unix:@ws-u-rejoin-{os.getpid()}-{uuid.uuid4().hex[:8]}")
url = s.url(0)
r = ws.Receiver(url)
connect_inproc(s, [r], timeout=20)
r.close()
died = None
try:
    s.send({"w": torch.ones(8)}, timeout=10)
except ws.ReceiverDiedError as e:
    died = e
if died is None:
    raise SystemExit("the send did not name receiver 0 gone: no verdict")
r2 = ws.Receiver(url)
err, got = None, None
try:
    got = r2.connect(timeout=8)
except ws.WeightSyncError as e:
    err = e
r2.close()
s.close()
if err is not None:
    bug(f"a new worker with the URL of gone receiver 0 could not join: {type(err).__name__}: {str(err)[:120]} "
        "(RDV-5: a valid Join for a gone receiver takes its place)")
fine(f"the restarted worker joined by URL and connected at version {got}")
