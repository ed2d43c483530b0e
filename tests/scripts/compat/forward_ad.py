"""Forward-mode AD: dual tensors and torch.func.jvp."""

import torch
import torch.autograd.forward_ad as fwAD
from torch.func import jvp

torch.manual_seed(0)
x, v = torch.randn(4), torch.randn(4)
with fwAD.dual_level():
    dual = fwAD.make_dual(x, v)
    out = torch.sin(dual) * dual
    primal, tangent = fwAD.unpack_dual(out)
print([round(t, 4) for t in tangent.tolist()])
_, t2 = jvp(lambda a: torch.sin(a) * a, (x,), (v,))
print(torch.allclose(tangent, t2))
lin = torch.nn.Linear(4, 2)
with fwAD.dual_level():
    y = lin(fwAD.make_dual(x, v))
    print([round(t, 4) for t in fwAD.unpack_dual(y).tangent.tolist()])
