"""Split learning: a client network and a server network exchanging activations at a cut layer.

Source: https://discuss.pytorch.org/t/how-to-continue-bp-using-intermediate-gradients/205181
The author split a classifier at a cut layer into a ClientModel (flatten, linear,
ReLU) and a ServerModel, and asked how to continue the backward pass on the client
with the gradient the server computes. The answer: run the server's backward,
record the gradient of the cut-layer activation (retain_grad) and pass it to
`torch.autograd.backward(activation, grad_tensors=...)` on the client. Simulated in
one process, the server here receives the client's activation itself rather than a
detached copy, so the server's `loss.backward()` already runs through the client's
graph and frees it; the client's backward with the returned gradient then fails with
"Trying to backward through the graph a second time". The data, sizes and the two
optimizers are the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ClientModel(nn.Module):
    def __init__(self, in_features=3 * 8 * 8, cut=32):
        super().__init__()
        self.layers = nn.Sequential(nn.Flatten(), nn.Linear(in_features, 64), nn.ReLU(), nn.Linear(64, cut), nn.ReLU())

    def forward(self, x):
        return self.layers(x)


class ServerModel(nn.Module):
    def __init__(self, cut=32, n_classes=10):
        super().__init__()
        self.cut_layer = nn.Linear(cut, 32)
        self.relu = nn.ReLU()
        self.cls_layer = nn.Linear(32, n_classes)

    def forward(self, x):
        return self.cls_layer(self.relu(self.cut_layer(x)))


class Client:
    def __init__(self, model, lr=0.05):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        self.activation = None

    def forward(self, images):
        self.opt.zero_grad()
        self.activation = self.model(images)
        return self.activation  # "sent" to the server

    def backward(self, grad_from_server):
        torch.autograd.backward(self.activation, grad_tensors=(grad_from_server,))
        self.opt.step()


class Server:
    def __init__(self, model, lr=0.05):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

    def train_step(self, smashed, labels):
        smashed.retain_grad()
        self.opt.zero_grad()
        logits = self.model(smashed)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        self.opt.step()
        return smashed.grad, loss.item()  # gradient "sent back" to the client


client = Client(ClientModel())
server = Server(ServerModel())

images = torch.randn(64, 3, 8, 8)
labels = torch.randint(0, 10, (64,))

for epoch in range(3):
    for i in range(0, 64, 16):
        x, y = images[i:i + 16], labels[i:i + 16]
        smashed = client.forward(x)
        server_input = smashed.detach().requires_grad_()
        grad, loss_value = server.train_step(server_input, y)
        client.backward(grad)
    print(f"epoch {epoch} loss {loss_value:.4f}")
