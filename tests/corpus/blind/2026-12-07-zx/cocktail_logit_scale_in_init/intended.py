"""Cocktail recommendation: match drink photos to recipe cards with a CLIP-style contrastive objective.

Source: https://github.com/isl-org/lang-seg/issues/38
The author plugged LSegNet (language-driven semantic segmentation) into their own training loop and got
"Trying to backward through the graph a second time" at the second step's loss.backward(); the official
Lightning run only failed the same way with num_sanity_val_steps=0. In LSeg's __init__ the temperature is
written as ``self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07)).exp()``: the exp is taken
once, at construction, so the module keeps a non-leaf tensor whose graph every forward reuses.

Reduction: a bar's recommender matches photo features of served drinks to bag-of-ingredient recipe
embeddings with a symmetric InfoNCE loss; the matcher module builds its temperature the same way in
__init__. Synthetic data: 24 cocktails, noisy photo features generated from each recipe.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)

CONFIG = {
    "n_cocktails": 24,
    "n_ingredients": 40,
    "photo_dim": 32,
    "embed_dim": 16,
    "batch_size": 8,
    "epochs": 2,
    "lr": 3e-3,
    "init_temperature": 0.07,
}


def make_bar_menu(cfg):
    """Recipes as ingredient-count vectors, photos as a noisy linear view of the recipe."""
    recipes = (torch.rand(cfg["n_cocktails"], cfg["n_ingredients"]) < 0.12).float()
    recipes[:, 0] = 1.0  # every card lists ice
    mixing = torch.randn(cfg["n_ingredients"], cfg["photo_dim"]) / math.sqrt(cfg["n_ingredients"])
    photos = recipes @ mixing + 0.1 * torch.randn(cfg["n_cocktails"], cfg["photo_dim"])
    return photos, recipes


class PhotoEncoder(nn.Module):
    def __init__(self, photo_dim, embed_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(photo_dim, 32), nn.GELU(), nn.Linear(32, embed_dim))

    def forward(self, photos):
        return self.net(photos)


class RecipeEncoder(nn.Module):
    def __init__(self, n_ingredients, embed_dim):
        super().__init__()
        self.ingredient_table = nn.Linear(n_ingredients, 32, bias=False)
        self.proj = nn.Linear(32, embed_dim)

    def forward(self, recipes):
        counts = recipes.sum(dim=1, keepdim=True).clamp(min=1.0)
        pooled = self.ingredient_table(recipes) / counts
        return self.proj(torch.tanh(pooled))


class DrinkMatcher(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.photo = PhotoEncoder(cfg["photo_dim"], cfg["embed_dim"])
        self.recipe = RecipeEncoder(cfg["n_ingredients"], cfg["embed_dim"])
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / cfg["init_temperature"]))

    def forward(self, photos, recipes):
        photo_emb = F.normalize(self.photo(photos), dim=-1)
        recipe_emb = F.normalize(self.recipe(recipes), dim=-1)
        return self.logit_scale.exp() * photo_emb @ recipe_emb.t()


def symmetric_info_nce(logits):
    targets = torch.arange(logits.shape[0])
    return 0.5 * (F.cross_entropy(logits, targets) + F.cross_entropy(logits.t(), targets))


def train(cfg):
    photos, recipes = make_bar_menu(cfg)
    matcher = DrinkMatcher(cfg)
    optimizer = torch.optim.Adam(matcher.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        order = torch.randperm(cfg["n_cocktails"])
        for start in range(0, cfg["n_cocktails"], cfg["batch_size"]):
            idx = order[start:start + cfg["batch_size"]]
            logits = matcher(photos[idx], recipes[idx])
            contrastive_loss = symmetric_info_nce(logits)
            optimizer.zero_grad()
            contrastive_loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: contrastive {contrastive_loss.item():.4f}")
    return matcher


if __name__ == "__main__":
    train(CONFIG)
