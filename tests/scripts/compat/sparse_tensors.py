"""Sparse tensors: a sparse matrix product, a sparse embedding gradient, SparseAdam."""

import torch

torch.manual_seed(0)
a = torch.randn(4, 5).relu().to_sparse().requires_grad_()
b = torch.randn(5, 3, requires_grad=True)
torch.sparse.mm(a, b).sum().backward()
print(a.grad.is_sparse, round(b.grad.sum().item(), 4))
emb = torch.nn.Embedding(10, 3, sparse=True)
opt = torch.optim.SparseAdam(emb.parameters(), lr=0.1)
for step in range(2):
    loss = emb(torch.tensor([1, 2, 2, 7])).pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, emb.weight.grad.is_sparse, round(loss.item(), 4))
