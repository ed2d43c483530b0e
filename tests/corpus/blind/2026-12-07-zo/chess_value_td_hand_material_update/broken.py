"""Chess position evaluation trained by TD(0) self-play targets, with a hand-updated material prior.

Source: https://github.com/karush17/Deep-Eligibility-Traces/issues/1 -- running the
Expected Traces agent raised errors; the maintainer answered that "the issue ... was an
in-place operation to a variable of the computation graph. This is prohibited in newer
versions of torch" and updated the repository. In ``Pytorch/qet.py`` the update step takes
``ag.grad(trace_loss, self.exp_trace_param)``, applies ``self.exp_trace_param +=
lr * trace_grad`` by hand, and only then computes the TD error's gradients.

Reduction: the agent becomes a small NNUE-flavoured value network over 12x8x8 piece
planes plus a material term whose per-piece values are a raw tensor kept outside the
optimizer and updated by hand (a pull towards classical piece values, then the TD
gradient), as the expected-trace parameter is in the report; the Adam optimizer holds the
network. Positions and "next positions" are synthetic.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(21)

HP = {"batch": 32, "steps": 6, "gamma": 0.99, "lr": 1e-3, "material_lr": 0.05, "prior_pull": 0.1}
CLASSICAL = torch.tensor([1.0, 3.0, 3.2, 5.0, 9.0, 0.0])  # P N B R Q K


def random_positions(n):
    planes = (torch.rand(n, 12, 8, 8) < 0.06).float()
    counts = planes.sum(dim=(2, 3))
    return planes, counts[:, :6] - counts[:, 6:]


class ValueNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature = nn.Sequential(nn.Flatten(), nn.Linear(12 * 64, 128), nn.ReLU(), nn.Linear(128, 32), nn.ReLU())
        self.out = nn.Linear(32, 1)

    def forward(self, planes):
        return self.out(self.feature(planes)).squeeze(1)


def evaluate(net, piece_logits, planes, material_diff):
    piece_values = F.softplus(piece_logits)
    material = (material_diff * piece_values).sum(1) / 10.0
    return torch.tanh(net(planes) + material)


def material_prior(piece_logits):
    return ((F.softplus(piece_logits) - CLASSICAL) ** 2).sum()


def td_update(net, optimizer, piece_logits, batch):
    planes, diff, next_planes, next_diff, reward = batch
    value = evaluate(net, piece_logits, planes, diff)
    with torch.no_grad():
        next_value = evaluate(net, piece_logits, next_planes, next_diff)
    target = reward + HP["gamma"] * next_value
    td_loss = F.mse_loss(value, target)

    prior_loss = HP["prior_pull"] * material_prior(piece_logits)
    (g_prior,) = torch.autograd.grad(prior_loss, piece_logits)
    with torch.no_grad():
        piece_logits -= HP["material_lr"] * g_prior

    optimizer.zero_grad()
    td_loss.backward()
    optimizer.step()
    with torch.no_grad():
        piece_logits -= HP["material_lr"] * piece_logits.grad
    piece_logits.grad = None
    return td_loss.item()


def main():
    net = ValueNet()
    piece_logits = torch.log(torch.expm1(torch.tensor([0.8, 2.5, 2.5, 4.0, 7.0, 0.1]))).requires_grad_()
    optimizer = torch.optim.Adam(net.parameters(), lr=HP["lr"])
    for step in range(HP["steps"]):
        planes, diff = random_positions(HP["batch"])
        next_planes, next_diff = random_positions(HP["batch"])
        reward = torch.randint(-1, 2, (HP["batch"],)).float() * (torch.rand(HP["batch"]) < 0.1).float()
        loss = td_update(net, optimizer, piece_logits, (planes, diff, next_planes, next_diff, reward))
        print(f"step {step} td {loss:.4f} values {F.softplus(piece_logits).detach().numpy().round(2)}")


if __name__ == "__main__":
    main()
