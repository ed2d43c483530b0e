import torch
from torch import nn

torch.manual_seed(23)
encoder = nn.Sequential(nn.Linear(8, 16), nn.GELU())
probe = nn.Linear(16, 2)
images, classes = torch.randn(24, 8), torch.randint(0, 2, (24,))
with torch.no_grad():
    cache = encoder(images)
optimizer = torch.optim.SGD(probe.parameters(), lr=0.1)
for _ in range(3):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(probe(cache), classes)
    loss.backward()
    optimizer.step()
