"""Restaurant demand: two-objective model over a menu catalog with cached dish vectors.

Source: https://github.com/SimplexLab/TorchJD/issues/398

The report trains a model on several objectives with TorchJD and gets "Trying to
backward through the graph a second time" although the script has a single
backward call. The author finds that changing the one line that produces the
``features`` makes it run, and asks whether something is wrong with the features;
the features tensor was produced with history and reused across iterations.
This script moves the pattern to a restaurant: a catalog object encodes every
dish from its ingredient bag with a trainable encoder the first time the vectors
are asked for and keeps them. Each service day the demand model combines the dish
vectors with day context (weekday, weather, bookings) and is trained on two
objectives at once, covers ordered per dish (Poisson) and kilograms wasted per
dish (MSE), with one ``torch.autograd.backward`` over both losses.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

MENU_CFG = {
    "dishes": 20,
    "ingredients": 30,
    "dish_dim": 16,
    "context_dim": 6,
    "hidden": 32,
    "lr": 2e-3,
    "service_days": 4,
}


class DishEncoder(nn.Module):
    def __init__(self, n_ingredients, dim):
        super().__init__()
        self.proj = nn.Linear(n_ingredients, dim)

    def forward(self, bags):
        return torch.tanh(self.proj(bags))


class MenuCatalog:
    def __init__(self, ingredient_bags, encoder):
        self.ingredient_bags = ingredient_bags
        self.encoder = encoder
        self._dish_vectors = None

    def dish_vectors(self):
        if self._dish_vectors is None:
            self._dish_vectors = self.encoder(self.ingredient_bags)
        return self._dish_vectors


class DemandModel(nn.Module):
    def __init__(self, dish_dim, ctx_dim, hidden):
        super().__init__()
        self.mix = nn.Sequential(nn.Linear(dish_dim + ctx_dim, hidden), nn.ReLU())
        self.orders_head = nn.Linear(hidden, 1)
        self.waste_head = nn.Linear(hidden, 1)

    def forward(self, dish_vecs, context):
        ctx = context.unsqueeze(0).expand(dish_vecs.shape[0], -1)
        h = self.mix(torch.cat([dish_vecs, ctx], dim=1))
        return self.orders_head(h).squeeze(1), self.waste_head(h).squeeze(1)


def service_day(n_dishes, ctx_dim):
    context = torch.randn(ctx_dim)
    covers = torch.poisson(torch.full((n_dishes,), 6.0))
    waste_kg = torch.rand(n_dishes) * 0.8
    return context, covers, waste_kg


def main(cfg):
    torch.manual_seed(21)
    bags = (torch.rand(cfg["dishes"], cfg["ingredients"]) < 0.2).float()
    encoder = DishEncoder(cfg["ingredients"], cfg["dish_dim"])
    catalog = MenuCatalog(bags, encoder)
    demand = DemandModel(cfg["dish_dim"], cfg["context_dim"], cfg["hidden"])
    menu_opt = torch.optim.Adam(list(encoder.parameters()) + list(demand.parameters()), lr=cfg["lr"])

    for day in range(cfg["service_days"]):
        context, covers, waste_kg = service_day(cfg["dishes"], cfg["context_dim"])
        log_rate, waste_pred = demand(catalog.dish_vectors(), context)
        orders_loss = F.poisson_nll_loss(log_rate, covers, log_input=True)
        waste_loss = F.mse_loss(waste_pred, waste_kg)
        menu_opt.zero_grad()
        torch.autograd.backward([orders_loss, waste_loss])
        menu_opt.step()
        print(f"day {day}: orders {orders_loss.item():.3f} waste {waste_loss.item():.4f}")


if __name__ == "__main__":
    main(MENU_CFG)
