"""Packed weights (API-8): a parameter's .data is replaced; every later send of that Packed must raise
WeightsMismatchError (or deliver the new value), never publish the buffer's stale bytes."""
import _confirm
import torch

ws = _confirm.module()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
packed = ws.pack(model)
target = {k: torch.zeros_like(v) for k, v in model.state_dict().items()}
with ws.Sender(packed, 1) as sender:
    r = ws.Receiver(sender.handle(0), target)
    _confirm.connect_inproc(sender, [r], timeout=20)
    with torch.no_grad():
        model[0].weight.add_(1.0)
    assert sender.send(timeout=10) == 1
    # The trainer re-homes one parameter (a checkpoint load by assignment, say).
    model[1].weight.data = torch.full((2, 3), 7.0)
    outcomes = []
    for _attempt in range(3):
        try:
            v = sender.send(timeout=10)
            outcomes.append(("returned", v))
        except ws.WeightsMismatchError as e:
            outcomes.append(("refused", str(e)[:60]))
    print("sends after the re-homing:", outcomes)
    got = r.weights["1.weight"]
    print("receiver version", r.version, "1.weight", got.flatten()[:3].tolist())
    for kind, v in outcomes:
        if kind == "returned" and not torch.equal(got, model[1].weight.detach()):
            _confirm.bug(f"after the first send refused the re-homed tensor, a later send returned {v} and published "
                         f"the buffer's stale bytes for '1.weight' ({got.flatten()[:3].tolist()}) instead of its "
                         "value, 7.0 (API-8)")
    if outcomes[0][0] != "refused":
        _confirm.fine("the send delivered the re-homed tensor's value")
    r.close()
_confirm.fine(f"every send of the Packed after the re-homing: {[k for k, _ in outcomes]}")
