"""Ceramic glaze firing: multi-task prediction of glaze gloss and crazing risk from kiln schedules, balanced by GradNorm.

Source: https://github.com/hosseinshn/GradNorm/issues/10

The report: in a GradNorm training loop adapted from the repository's notebook, the line
``G1R = torch.autograd.grad(L1, param[0].clone(), retain_graph=True, create_graph=True)``
raised "One of the differentiated Tensors appears to not have been used in the graph.
Set allow_unused=True if this is the desired behavior." The clone is a new tensor made
after the forward, so the task loss never used it; GradNorm needs the gradient of each
weighted task loss with respect to the shared weight itself (the repository's notebook
passes ``param[0]``).

The setting here is the writer's: a studio potter's log of glaze firings (peak cone
temperature, ramp rates, soak time, cooling rate, glaze thickness, silica/alumina ratio,
flux content) feeds a shared trunk with two heads, gloss (regression) and crazing
(binary). Two task weights are learned with GradNorm against the gradient norms at the
trunk's first layer, using a separate optimizer; they are renormalised after every step.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = {
    "n_firings": 160,
    "n_features": 8,
    "hidden": 32,
    "alpha": 1.5,
    "batch": 40,
    "epochs": 2,
    "lr": 2e-3,
    "lr_weights": 2e-2,
}


def firing_log(n, n_features, gen):
    x = torch.randn(n, n_features, generator=gen)
    gloss = 0.6 * x[:, 0] + 0.3 * x[:, 3] - 0.4 * x[:, 6] + 0.1 * torch.randn(n, generator=gen)
    craze_logit = 1.2 * x[:, 4] - 0.8 * x[:, 5] + 0.5 * x[:, 0] * x[:, 4]
    crazed = (torch.rand(n, generator=gen) < torch.sigmoid(craze_logit)).float()
    return x, gloss.unsqueeze(1), crazed.unsqueeze(1)


class GlazeNet(nn.Module):
    def __init__(self, n_features, hidden):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.gloss_head = nn.Linear(hidden, 1)
        self.craze_head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.trunk(x)
        return self.gloss_head(h), self.craze_head(h)


def main():
    torch.manual_seed(21)
    gen = torch.Generator().manual_seed(21)
    x, gloss, crazed = firing_log(CFG["n_firings"], CFG["n_features"], gen)

    model = GlazeNet(CFG["n_features"], CFG["hidden"])
    task_weights = torch.ones(2, requires_grad=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=CFG["lr"])
    weight_optimizer = torch.optim.Adam([task_weights], lr=CFG["lr_weights"])
    param = list(model.parameters())
    initial_losses = None

    for epoch in range(CFG["epochs"]):
        for start in range(0, CFG["n_firings"], CFG["batch"]):
            xb = x[start:start + CFG["batch"]]
            gloss_pred, craze_logit = model(xb)
            gloss_loss = F.mse_loss(gloss_pred, gloss[start:start + CFG["batch"]])
            craze_loss = F.binary_cross_entropy_with_logits(craze_logit, crazed[start:start + CFG["batch"]])
            task_losses = torch.stack([gloss_loss, craze_loss])
            if initial_losses is None:
                initial_losses = task_losses.detach()

            weighted = task_weights * task_losses
            total_loss = weighted.sum()
            optimizer.zero_grad()
            total_loss.backward(retain_graph=True)

            norms = []
            for i in range(2):
                g = torch.autograd.grad(weighted[i], param[0], retain_graph=True, create_graph=True)[0]
                norms.append(torch.norm(g, 2))
            norms = torch.stack(norms)

            loss_ratio = task_losses.detach() / initial_losses
            inverse_rate = loss_ratio / loss_ratio.mean()
            targets = (norms.mean() * inverse_rate ** CFG["alpha"]).detach()
            gradnorm_loss = F.l1_loss(norms, targets, reduction="sum")

            weight_optimizer.zero_grad()
            gradnorm_loss.backward(inputs=[task_weights])

            optimizer.step()
            weight_optimizer.step()
            with torch.no_grad():
                task_weights.mul_(2 / task_weights.sum())

        print(f"epoch {epoch}: gloss {gloss_loss.item():.4f} craze {craze_loss.item():.4f} "
              f"weights {[round(w, 3) for w in task_weights.tolist()]}")


if __name__ == "__main__":
    main()
