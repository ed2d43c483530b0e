"""(Intended: the graph kept through the per-modality gradients.) Decision Transformer on synthetic offline trajectories: returns-to-go, state and action tokens,
a causal transformer, an action-prediction loss; per-modality input-gradient norms are logged to
check that the model conditions on the returns-to-go.

Source: https://github.com/shap/shap/pull/684 -- shap's PyTorch DeepExplainer took one gradient per
model input, ``torch.autograd.grad(selected, x)`` for each ``x`` of a multi-input model; the first
call freed the graph, so the second raised "Trying to backward through the graph a second time".
The PR keeps the graph (``retain_graph=True``) for every input but the last. The training setting is
the writer's: one gradient per token modality taken from the training loss, then the loss's own
backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

STATE_DIM, ACT_DIM, CTX, EMB, BATCH, MAX_T = 6, 3, 8, 32, 16, 50


class DecisionTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_rtg = nn.Linear(1, EMB)
        self.embed_state = nn.Linear(STATE_DIM, EMB)
        self.embed_action = nn.Linear(ACT_DIM, EMB)
        self.embed_time = nn.Embedding(MAX_T, EMB)
        self.ln = nn.LayerNorm(EMB)
        layer = nn.TransformerEncoderLayer(EMB, 4, 64, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.predict_action = nn.Sequential(nn.Linear(EMB, ACT_DIM), nn.Tanh())

    def embed(self, rtg, states, actions, timesteps):
        t = self.embed_time(timesteps)
        return self.embed_rtg(rtg) + t, self.embed_state(states) + t, self.embed_action(actions) + t

    def forward(self, tokens):
        r, s, a = tokens
        b, n, _ = r.shape
        seq = torch.stack([r, s, a], dim=2).reshape(b, 3 * n, EMB)
        mask = torch.triu(torch.full((3 * n, 3 * n), float("-inf")), diagonal=1)
        h = self.blocks(self.ln(seq), mask=mask).reshape(b, n, 3, EMB)
        return self.predict_action(h[:, :, 1])


def sample_batch():
    states = torch.randn(BATCH, CTX, STATE_DIM)
    actions = torch.tanh(states[..., :ACT_DIM] + 0.1 * torch.randn(BATCH, CTX, ACT_DIM))
    rewards = -(actions - 0.5).pow(2).sum(-1, keepdim=True)
    rtg = rewards.flip(1).cumsum(1).flip(1) / 10.0
    start = torch.randint(0, MAX_T - CTX, (BATCH, 1))
    return rtg, states, actions, start + torch.arange(CTX)


model = DecisionTransformer()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-4)

for step in range(4):
    rtg, states, actions, timesteps = sample_batch()
    tokens = model.embed(rtg, states, actions, timesteps)
    pred = model(tokens)
    loss = F.mse_loss(pred, actions)

    grad_norms = {}
    for name, tok in zip(("rtg", "state", "action"), tokens):
        g = torch.autograd.grad(loss, tok, retain_graph=True)[0]
        grad_norms[name] = g.norm().item()

    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    optimizer.step()
    print(step, round(loss.item(), 4), {k: round(v, 5) for k, v in grad_norms.items()})
