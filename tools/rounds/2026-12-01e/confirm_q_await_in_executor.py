"""A coroutine awaits a send to a silent receiver under asyncio.wait_for(..., 0.5), gives up (TimeoutError), and
returns: asyncio.run() must then return too (the bound is the caller's, API-11)."""
import asyncio
import time

import torch
from _confirm import bug, fine, in_thread, module
from _wirepeer import Peer

ws = module()
s = ws.Sender({"w": torch.zeros(4)}, 1)
peer = Peer(s.handle(0), timeout=10)
out, t = in_thread(s.connect, 10)
init = peer.read()
peer.send(peer.ready_msg(init))
t.join(10)
if "error" in out:
    raise out["error"]


async def main():
    f = s.send_async()
    try:
        await asyncio.wait_for(f, 0.5)
        return "returned"
    except TimeoutError:
        return "timeout"


t0 = time.monotonic()
res, rt = in_thread(asyncio.run, main())
rt.join(5)
el = time.monotonic() - t0
if rt.is_alive():
    s.close()
    bug(f"asyncio.run() of a coroutine whose await timed out had not returned after {el:.1f}s")
s.close()
if res.get("result") != "timeout":
    bug(f"the await gave {res!r}")
fine(f"asyncio.wait_for(future, 0.5) timed out and asyncio.run() returned after {el:.1f}s")
