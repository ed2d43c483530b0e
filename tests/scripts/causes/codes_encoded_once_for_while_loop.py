"""An autoencoder is pretrained on its own optimizer; its codes of the whole set are then computed once, with the
encoder's graph, and a probe is trained on them by a while loop over batches that reads the codes' length."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(137)


class AE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Linear(6, 3)
        self.dec = nn.Linear(3, 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        code = torch.tanh(self.enc(x))
        return code, F.mse_loss(self.dec(code), x)


data, labels = torch.randn(24, 6), torch.randint(0, 2, (24,))
ae = AE()
ae_opt = torch.optim.Adam(ae.parameters(), lr=1e-2)
for start in range(0, 24, 6):
    _, rec = ae(data[start : start + 6])
    ae_opt.zero_grad()
    rec.backward()
    ae_opt.step()

codes, _ = ae(data)
probe = nn.Linear(3, 2)
opt = torch.optim.SGD(probe.parameters(), lr=0.1)
start = 0
while start < len(codes):
    loss = F.cross_entropy(probe(codes[start : start + 8]), labels[start : start + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
    start += 8
