"""A worker (on the wire, through its handle's socket) acks version 1 and exits at once; the trainer then waits on
the future of version 1: every target acked it ok, so wait() must return 1 (SEND-1), and after close() too (LIFE-8)."""
import time

import _confirm
import _wirepeer
import i_helpers as H

ws = _confirm.module()
w0 = H.weights(0)
live = {k: v.clone() for k, v in w0.items()}


def acks_and_exits(sender, i):
    """A wire receiver for handle i: Ready(ok), then Ack(ok) of the first Receive, then it closes its socket."""
    peer = _wirepeer.Peer(sender.handle(i), 20)

    def run():
        init = peer.read()
        peer.send(peer.ready_msg(init))
        while True:
            msg = peer.read()
            if msg.get("type") == "Receive":
                peer.send({"type": "Ack", "receiver": i, "version": msg["version"], "status": "ok", "detail": ""})
                peer.close()  # the process exits right after its last ack
                return

    return _wirepeer.in_thread(run)


for how in ("wait", "close"):
    with ws.Sender(live, 2) as sender:
        r0 = ws.Receiver(sender.handle(0), H.zeros_like(w0))
        out, t = acks_and_exits(sender, 1)
        _confirm.connect_inproc(sender, [r0], timeout=20)
        for k, v in H.weights(1).items():
            live[k].copy_(v)
        f = sender.send_async(timeout=10)
        t.join(10)
        assert "error" not in out, out
        H.wait_until(lambda: r0.version == 1, 10)  # noqa: B023
        time.sleep(0.3)  # both answers, and worker 1's end of channel, are in the sender's channels now
        if how == "close":
            sender.close()
        try:
            v = f.wait(5)
        except ws.WeightSyncError as e:
            _confirm.bug(f"({how}) version 1, acked ok by both targets before the worker exited, failed: "
                         f"{type(e).__name__}: {getattr(e, 'details', e)} (SEND-1, LIFE-8)")
        print(how, ": wait() returned", v)
        r0.close()
_confirm.fine("a version acked before the worker's exit completed, with and without close()")
