"""A recommender whose feature store embeds the item catalogue with a trained tower each time it is asked."""

import torch
import torch.nn as nn

torch.manual_seed(14)


class FeatureStore:
    def __init__(self, item_feats: torch.Tensor, tower: nn.Module) -> None:
        self.item_feats = item_feats
        self.tower = tower
        self._item_emb = None

    def items(self) -> torch.Tensor:
        return self.tower(self.item_feats)


def train(store: FeatureStore, user_tower: nn.Module, opt: torch.optim.Optimizer, rounds: int = 3) -> float:
    for r in range(rounds):
        users = torch.randn(4, 6)
        clicks = torch.randint(0, 7, (4,))
        scores = user_tower(users) @ store.items().T
        ranking = nn.functional.cross_entropy(scores, clicks)
        opt.zero_grad()
        ranking.backward()
        opt.step()
    return ranking.item()


item_tower, user_tower = nn.Linear(5, 3), nn.Linear(6, 3)
store = FeatureStore(torch.randn(7, 5), item_tower)
opt = torch.optim.SGD([*item_tower.parameters(), *user_tower.parameters()], lr=0.1)
print(round(train(store, user_tower, opt), 5))
