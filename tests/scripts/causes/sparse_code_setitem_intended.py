import torch
import torch.nn as nn

torch.manual_seed(0)
enc = nn.Linear(10, 20)
dec = nn.Linear(20, 10)
opt = torch.optim.SGD(list(enc.parameters()) + list(dec.parameters()), lr=0.1)
for it in range(5):
    x = torch.randn(32, 10)
    h = torch.sigmoid(enc(x))
    h = h.masked_fill(h < 0.5, 0)  # sparsify the code
    recon = dec(h)
    loss = ((recon - x) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
