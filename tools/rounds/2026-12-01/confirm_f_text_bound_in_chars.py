"""A scripted receiver answers a Receive with Ack(error) whose detail is 3,000 'é' (6,000 bytes of UTF-8, over
WIRE-3's 4,096-byte bound, though 3,000 characters): the sender must cut it off as a violation (WIRE-3)."""
import _confirm
import _wirepeer
import torch

if __name__ == "__main__":
    ws = _confirm.module()
    sender = ws.Sender({"w": torch.arange(8, dtype=torch.float32)}, 1)
    peer = _wirepeer.Peer(sender.handle(0), timeout=15)
    out, t = _confirm.in_thread(sender.connect, 15)
    init = peer.read()
    assert init["type"] == "Init", init
    peer.send(peer.ready_msg(init))
    t.join(15)
    if "error" in out:
        raise out["error"]
    fut = sender.send_async({"w": torch.ones(8)}, timeout=10)
    rec = peer.read()
    while rec["type"] != "Receive":
        rec = peer.read()
    detail = "\u00e9" * 3000
    assert len(detail) <= 4096 < len(detail.encode("utf-8"))
    peer.send({"type": "Ack", "receiver": 0, "version": rec["version"], "status": "error", "detail": detail})
    try:
        fut.wait(10)
    except ws.ReceiverError as e:
        cause = e.causes.get(0)
        if cause == "violation":
            _confirm.fine("the 6,000-byte detail was refused as a violation")
        _confirm.bug(f"an Ack whose detail is {len(detail.encode())} bytes of UTF-8 was taken as an answer: "
                     f"{type(e).__name__} cause {cause!r}, detail of {len(e.details.get(0, ''))} characters")
    except Exception as e:  # noqa: BLE001
        _confirm.bug(f"wait raised {type(e).__name__}: {e}")
    _confirm.bug("the send returned as if acked ok")
