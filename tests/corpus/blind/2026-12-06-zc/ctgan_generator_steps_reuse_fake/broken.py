"""Tabular data synthesis: a CTGAN-style conditional generator against a PacGAN critic with a gradient penalty.

Source: https://github.com/tamarott/SinGAN/issues/110 ("one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.FloatTensor [3, 32, 3, 3]] is at
version 2; expected version 1"). In SinGAN's training loop the fake image is generated once in the
critic phase, and the generator then takes ``Gsteps`` updates on ``netD(fake)`` with
``errG.backward(retain_graph=True)`` followed by ``optimizerG.step()``: from the second generator
update on, the backward runs through the generator graph of that one fake, whose saved weights the
previous ``optimizerG.step()`` has changed. The training setting is the writer's.

The author synthesises a table of two continuous columns (mode-specific normalisation: a scalar
and a one-hot mode per column) and one categorical column, with the conditional vector and the
PacGAN critic of CTGAN, and gives the generator several steps per critic step.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_ROWS, N_MODES, N_CATS = 256, 3, 4
EMBED, PAC, BATCH = 16, 4, 32
GENERATOR_STEPS = 3


def make_table():
    """Rows already transformed: per continuous column [alpha, one-hot mode], then the category one-hot."""
    cat = torch.randint(0, N_CATS, (N_ROWS,))
    cols = []
    for _ in range(2):
        mode = (cat + torch.randint(0, 2, (N_ROWS,))) % N_MODES
        alpha = (0.25 * torch.randn(N_ROWS)).clamp(-0.99, 0.99)
        cols += [alpha[:, None], F.one_hot(mode, N_MODES).float()]
    cols.append(F.one_hot(cat, N_CATS).float())
    return torch.cat(cols, 1), cat


SPANS = [(1, "tanh"), (N_MODES, "softmax"), (1, "tanh"), (N_MODES, "softmax"), (N_CATS, "softmax")]
DATA_DIM = sum(w for w, _ in SPANS)
COND_START = DATA_DIM - N_CATS


class Residual(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc, self.bn = nn.Linear(i, o), nn.BatchNorm1d(o)

    def forward(self, x):
        return torch.cat([F.relu(self.bn(self.fc(x))), x], dim=1)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        dim = EMBED + N_CATS
        self.res1, self.res2 = Residual(dim, 32), Residual(dim + 32, 32)
        self.out = nn.Linear(dim + 64, DATA_DIM)

    def forward(self, z, cond):
        return self.out(self.res2(self.res1(torch.cat([z, cond], 1))))


def apply_activate(raw):
    parts, st = [], 0
    for width, kind in SPANS:
        chunk = raw[:, st:st + width]
        parts.append(torch.tanh(chunk) if kind == "tanh" else F.gumbel_softmax(chunk, tau=0.2))
        st += width
    return torch.cat(parts, 1)


class PacCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(PAC * (DATA_DIM + N_CATS), 64), nn.LeakyReLU(0.2), nn.Dropout(0.5),
            nn.Linear(64, 64), nn.LeakyReLU(0.2), nn.Dropout(0.5), nn.Linear(64, 1))

    def forward(self, x):
        return self.net(x.view(-1, PAC * x.shape[1]))


def gradient_penalty(critic, real, fake, lam=10.0):
    alpha = torch.rand(real.shape[0] // PAC, 1, 1).repeat(1, PAC, real.shape[1]).view(-1, real.shape[1])
    inter = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    grads = torch.autograd.grad(critic(inter).sum(), inter, create_graph=True)[0]
    return lam * ((grads.view(-1, PAC * real.shape[1]).norm(2, dim=1) - 1) ** 2).mean()


table, categories = make_table()
generator, critic = Generator(), PacCritic()
optimizerG = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.9), weight_decay=1e-6)
optimizerD = torch.optim.Adam(critic.parameters(), lr=2e-4, betas=(0.5, 0.9))

for step in range(3):
    # conditional vector: pick a category, then real rows of that category (training-by-sampling)
    cat_pick = torch.randint(0, N_CATS, (BATCH,))
    cond = F.one_hot(cat_pick, N_CATS).float()
    rows = torch.stack([torch.nonzero(categories == c)[torch.randint(0, int((categories == c).sum()), (1,))][0, 0]
                        for c in cat_pick.tolist()])
    real = torch.cat([table[rows], cond], 1)

    fakez = torch.randn(BATCH, EMBED)
    fakeact = apply_activate(generator(fakez, cond))
    fake_cat = torch.cat([fakeact, cond], 1)

    y_real, y_fake = critic(real), critic(fake_cat.detach())
    loss_d = -(y_real.mean() - y_fake.mean()) + gradient_penalty(critic, real, fake_cat.detach())
    optimizerD.zero_grad()
    loss_d.backward()
    optimizerD.step()

    for _ in range(GENERATOR_STEPS):
        y_fake = critic(torch.cat([fakeact, cond], 1))
        cond_loss = F.cross_entropy(fakeact[:, COND_START:].clamp_min(1e-8).log(), cat_pick)
        loss_g = -y_fake.mean() + cond_loss
        optimizerG.zero_grad()
        loss_g.backward(retain_graph=True)
        optimizerG.step()
    print(f"step {step}: loss_d {loss_d.item():.3f} loss_g {loss_g.item():.3f}")
