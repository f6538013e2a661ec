"""Bug: a zero-copy receiver with a module target rebinds each parameter to its read-only slot view
(`param.data = view`) and leaves the parameter requiring grad. An inference worker that runs its policy outside
`torch.no_grad()` builds autograd graphs over the sender's slot at every step, and an optimizer or in-place update
on the worker (a fine-tuning head, an EMA, a stray `loss.backward(); opt.step()`) writes into a read-only mapping
and kills the worker with a fault. A careful implementer could have written it from ZC-1 ("a module whose tensors
it rebinds") and the rule that `.data` assignment is not recorded by autograd: the rebind is outside autograd,
the Parameter object (and any optimizer that holds it) is kept, so the weights seemed "handed out outside autograd"
already. Breaks ZC-3 ("A binding over an autograd library MUST hand zero-copy weights out outside autograd (in the
reference: `requires_grad` false, a module's rebound parameters included)").
"""
import weightsync  # noqa: F401
from weightsync import *  # noqa
from weightsync import CAPABILITIES, __all__, apply  # noqa: F401


def _apply(self, views, mapped):
    mapped.ready()  # the host waits for the sender's write of this slot (CUDA-2)
    self.fence.wait()  # and for the readers' kernels on the views given up (CUDA-3)
    if self.target is not None:
        for dst, view in zip(self.targets(), views):
            dst.data = view  # BUG: the Parameter keeps requires_grad: `.data` is outside autograd, it seemed enough
    self._views = views


VIOLATES = ("ZC-3",)
apply.ZeroCopy.apply = _apply
