"""Two workers, default max_slots (4). Worker 1 is slow to start: connect(workers=[1], timeout=0.3) times out with
its Init (v0, slots S0 S1) sent. The trainer goes on with worker 0 (pull, polling late), which makes the sender
allocate S2. Worker 1 then connects. Once worker 0 pins S0 and S1, a send to [1] goes into S2, which worker 1 was
never given: its Receive must introduce S2 (SLOT-1), and the send must return."""
import torch
from _confirm import bug, connect_inproc, fine, module

ws = module()
s = ws.Sender({"w": torch.zeros(8)}, 2)
r0 = ws.Receiver(s.handle(0), mode="pull")
connect_inproc(s, [r0], workers=[0], timeout=10)
r1 = ws.Receiver(s.handle(1))
try:
    s.connect(timeout=0.3, workers=[1])
    raise SystemExit("worker 1 connected although it never called connect(): no verdict")
except ws.SyncTimeoutError:
    pass
f1 = s.send_async({"w": torch.full((8,), 1.0)}, workers=[0], timeout=5)
f2 = s.send_async({"w": torch.full((8,), 2.0)}, workers=[0], timeout=5)  # S0 (Init of 1), S1 pinned: S2 allocated
r0.poll(timeout=5)
f2.wait(5)
connect_inproc(s, [r1], workers=[1], timeout=10)  # the late worker comes up
f3 = s.send_async({"w": torch.full((8,), 3.0)}, workers=[0], timeout=5)
f4 = s.send_async({"w": torch.full((8,), 4.0)}, workers=[0], timeout=5)  # worker 0 now pins two slots
err, got = None, None
try:
    got = s.send({"w": torch.full((8,), 5.0)}, workers=[1], timeout=5)
except Exception as e:  # noqa: BLE001
    err = e
w1 = r1.weights["w"][0].item() if not r1.stopped else None
stopped, failure = r1.stopped, r1.failure
r0.close()
r1.close()
s.close()
if got is not None and w1 == 5.0:
    fine(f"the late worker got version {got} (weights {w1})")
if err is not None or stopped:
    bug(f"the send to the late worker failed: {type(err).__name__}: {str(err)[:120]}; worker 1 stopped={stopped} "
        f"failure={str(failure)[:120]}")
raise SystemExit(f"unexpected: got={got} w1={w1}")
