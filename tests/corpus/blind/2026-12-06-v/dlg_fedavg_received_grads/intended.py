"""Corrected as the maintainer did: the attacker detaches the gradients it received before matching them
(``[g.detach() for g in received_gradients]``), so the distance only differentiates through the dummy
data's own graph.

Deep leakage from gradients (DLG, Zhu et al. 2019) run by a curious FedAvg server: after each
communication round the server takes the "gradient" a client uploaded and reconstructs the client's
private image and label by matching the gradients of dummy data against it.

Reduced from https://github.com/Koukyosyumei/AIJack/issues/159: the author ran AIJack's tutorial
"gradient-based model inversion attack against federated learning" (a FedAVG client uploads
``(prev_param - param) / lr`` after its local step, a server wrapped with the gradient-inversion
attacker reconstructs the data on receive) and every attack failed right after the local iteration
with "Trying to backward through the graph a second time". The uploaded deltas are computed from the
client's parameters with autograd on, so they carry a graph (``(prev - param) / lr`` saves ``lr`` for its
backward); the attack's distance backpropagates into that graph at its first iteration and frees it,
and the second iteration goes through it again. The maintainer's fix detaches the received gradients.
The attack here uses Adam (one of AIJack's optimizer choices) rather than L-BFGS.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CLASSES, SIDE = 10, 16


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2, stride=2), nn.Sigmoid(),
            nn.Conv2d(6, 6, 5, padding=2, stride=2), nn.Sigmoid(),
        )
        self.fc = nn.Linear(6 * (SIDE // 4) ** 2, N_CLASSES)

    def forward(self, x):
        return self.fc(self.body(x).flatten(1))


class FedAvgClient:
    def __init__(self, model, lr):
        self.model, self.lr = model, lr
        self.prev_parameters = [copy.deepcopy(p) for p in model.parameters()]

    def download(self, state):
        self.model.load_state_dict(state)
        self.prev_parameters = [copy.deepcopy(p) for p in self.model.parameters()]

    def local_train(self, batches, optimizer):
        for x, y in batches:
            optimizer.zero_grad()
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            optimizer.step()
        return loss.item()

    def upload_gradients(self):
        return [(prev - p) / self.lr for p, prev in zip(self.model.parameters(), self.prev_parameters)]


def soft_cross_entropy(logits, soft_target):
    return torch.mean(torch.sum(-soft_target * F.log_softmax(logits, dim=-1), dim=-1))


def dlg_attack(model, received_gradients, n_iter, x_shape):
    received_gradients = [g.detach() for g in received_gradients]
    dummy_data = torch.randn(x_shape, requires_grad=True)
    dummy_label = torch.randn(x_shape[0], N_CLASSES, requires_grad=True)
    attack_optimizer = torch.optim.Adam([dummy_data, dummy_label], lr=0.1)
    for it in range(n_iter):
        attack_optimizer.zero_grad()
        dummy_loss = soft_cross_entropy(model(dummy_data), F.softmax(dummy_label, dim=-1))
        dummy_gradients = torch.autograd.grad(dummy_loss, model.parameters(), create_graph=True)
        distance = sum(((fg - rg) ** 2).sum() for fg, rg in zip(dummy_gradients, received_gradients))
        distance.backward()
        attack_optimizer.step()
    return dummy_data.detach(), dummy_label.detach().argmax(dim=-1), distance.item()


global_model = LeNet()
client_model = LeNet()
client_model.load_state_dict(global_model.state_dict())
client = FedAvgClient(client_model, lr=1.0)
client_optimizer = torch.optim.SGD(client_model.parameters(), lr=1.0)

private_x = torch.rand(1, 1, SIDE, SIDE)
private_y = torch.tensor([3])

for communication in range(2):
    client.download(global_model.state_dict())
    local_loss = client.local_train([(private_x, private_y)], client_optimizer)

    received = client.upload_gradients()
    recon_x, recon_y, dist = dlg_attack(global_model, received, n_iter=20, x_shape=private_x.shape)
    mse = F.mse_loss(recon_x, private_x).item()
    print(f"round {communication}: client loss {local_loss:.3f} | attack distance {dist:.4f} "
          f"label {recon_y.item()} image mse {mse:.4f}")

    with torch.no_grad():  # FedAvg with a single client: apply its gradient to the global model
        for p, g in zip(global_model.parameters(), received):
            p -= 1.0 * g
