"""A captioner conditioned on a fixed prompt: the prompt's features come from the text tower once, at module
level, and `train_step()` (called for every batch) adds them to each image's features."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(23)
text_tower = nn.Sequential(nn.Embedding(20, 8), nn.Flatten(0), nn.Linear(24, 8))
image_tower = nn.Linear(10, 8)
decoder = nn.Linear(8, 20)
params = [*text_tower.parameters(), *image_tower.parameters(), *decoder.parameters()]
adam = torch.optim.Adam(params, lr=1e-3)

prompt = torch.tensor([3, 7, 11])
prompt_feat = text_tower(prompt)


def train_step(images, words):
    feats = image_tower(images) + prompt_feat
    loss = F.cross_entropy(decoder(feats), words)
    adam.zero_grad()
    loss.backward()
    adam.step()
    return loss.item()


for step in range(4):
    print(train_step(torch.randn(6, 10), torch.randint(0, 20, (6,))))
