"""`await future` on an idle event loop must give the version soon after the receiver acks (API-11)."""
import asyncio
import threading
import time

import _confirm
import g_helpers as h

ws = _confirm.module()
own = {k: v.clone() for k, v in h.weights(0).items()}
sender = ws.Sender(own, 1)
r0 = ws.Receiver(sender.handle(0), mode="pull")
h.connect(sender, [r0])
h.load(h.weights(1), own)
fut = sender.send_async(timeout=10)


def late_poll():
    time.sleep(0.5)
    r0.poll(timeout=5)


async def main():
    t0 = time.monotonic()
    try:
        v = await asyncio.wait_for(fut, 8)
    except TimeoutError:
        return None, time.monotonic() - t0
    return v, time.monotonic() - t0


threading.Thread(target=late_poll, daemon=True).start()
v, took = asyncio.run(main())
if v is None:
    _confirm.bug(f"await future timed out after {took:.1f} s, though the receiver acked version {fut.version} "
                 f"after 0.5 s (wait(0): {fut.wait(0)})")
if v != fut.version or took > 4:
    _confirm.bug(f"await future gave {v} after {took:.1f} s (receiver acked after 0.5 s)")
sender.close()
_confirm.fine(f"await gave version {v} after {took:.2f} s")
