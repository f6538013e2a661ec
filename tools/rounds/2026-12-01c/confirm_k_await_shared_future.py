"""`await asyncio.wait_for(future, t)` times out on a slow receiver; awaiting the same future again must
give its version once the receiver acked (API-11), not CancelledError."""
import asyncio
import threading

import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
w = {"w": torch.zeros(4)}
out = {}


async def main(f, rx):
    try:
        await asyncio.wait_for(f, 0.5)
        out["first"] = "returned"
    except TimeoutError:
        out["first"] = "timeout"
    threading.Timer(0.2, lambda: rx.poll(10)).start()  # the slow receiver catches up
    try:
        out["second"] = await asyncio.wait_for(f, 15)
    except asyncio.CancelledError:
        out["second"] = "CancelledError"
    except BaseException as e:  # noqa: BLE001
        out["second"] = f"{type(e).__name__}: {e}"


with ws.Sender(w, 1) as s:
    rx = ws.Receiver(s.handle(0), mode="pull")
    connect_inproc(s, [rx])
    f = s.send_async(timeout=10)
    try:
        asyncio.run(main(f, rx))
    except BaseException as e:  # noqa: BLE001
        out["run"] = f"{type(e).__name__}: {e}"
    rx.close()
print(out)
if out.get("first") != "timeout":
    print("the first await did not time out: no conclusion")
if out.get("second") != f.version:
    bug(f"after one await timed out, awaiting the future again gave {out.get('second', out.get('run'))!r}, "
        f"not version {f.version} (API-11)")
fine("the second await gave the version")
