"""CVRP attention decoder trained by REINFORCE, one backward call per decoding step.

Report: https://github.com/rentruewang/brief/issues/1 ("loss.backward(retain_graph=True) in
optimization of G ?"). The maintainer explains that the graph is built once and the loss of every
step is backpropagated inside a loop, so each ``backward`` after the first walks a graph the
previous call already freed unless ``retain_graph=True`` is given; the alternative he names is to
sum all the step losses and call ``backward`` once. The training setting is the writer's: a
capacitated vehicle routing problem, node embeddings computed once per batch, a GRU-cell pointer
decoder with visited and capacity masks, and REINFORCE with a learned critic baseline. The author
calls ``backward`` on each step's policy-gradient term as it is produced (without retain_graph),
so the second step's backward needs the encoder's saved tensors that the first one freed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CUST, BATCH, HID, CAPACITY = 10, 16, 32, 1.0


def make_instances(batch):
    coords = torch.rand(batch, N_CUST + 1, 2)              # node 0 is the depot
    demand = torch.rand(batch, N_CUST + 1) * 0.25 + 0.05
    demand[:, 0] = 0.0
    return coords, demand


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(3, HID)
        self.layer = nn.TransformerEncoderLayer(HID, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)

    def forward(self, coords, demand):
        return self.layer(self.embed(torch.cat([coords, demand[..., None]], -1)))


class PointerDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(HID + 1, HID)
        self.W_ref = nn.Linear(HID, HID, bias=False)
        self.W_q = nn.Linear(HID, HID, bias=False)
        self.v = nn.Linear(HID, 1, bias=False)

    def step(self, h, last_emb, load, emb, mask):
        h = self.cell(torch.cat([last_emb, load[:, None]], -1), h)
        u = self.v(torch.tanh(self.W_ref(emb) + self.W_q(h)[:, None])).squeeze(-1)
        u = 10.0 * torch.tanh(u)
        return h, F.log_softmax(u.masked_fill(mask, float("-inf")), dim=-1)


def feasibility_mask(visited, demand, load, at_depot):
    mask = visited | (demand > load[:, None])
    mask[:, 0] = at_depot & ~(visited[:, 1:].all(-1))     # no depot->depot unless finished
    return mask


encoder, decoder = Encoder(), PointerDecoder()
critic = nn.Sequential(nn.Linear(2 * (N_CUST + 1) + N_CUST + 1, 64), nn.ReLU(), nn.Linear(64, 1))
policy_opt = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=1e-3)
critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)

for it in range(4):
    coords, demand = make_instances(BATCH)
    emb = encoder(coords, demand)
    h = emb.mean(1)
    load = torch.full((BATCH,), CAPACITY)
    visited = torch.zeros(BATCH, N_CUST + 1, dtype=torch.bool)
    cur = torch.zeros(BATCH, dtype=torch.long)
    tour_len = torch.zeros(BATCH)
    step_logps = []
    for t in range(2 * N_CUST):
        if visited[:, 1:].all():
            break
        mask = feasibility_mask(visited, demand, load, cur == 0)
        h, logp = decoder.step(h, emb[torch.arange(BATCH), cur], load, emb, mask)
        nxt = torch.distributions.Categorical(logits=logp).sample()
        step_logps.append(logp.gather(1, nxt[:, None]).squeeze(1))
        tour_len = tour_len + (coords[torch.arange(BATCH), nxt] - coords[torch.arange(BATCH), cur]).norm(dim=-1)
        visited = visited.clone()
        visited[torch.arange(BATCH), nxt] = nxt != 0
        load = torch.where(nxt == 0, torch.full_like(load, CAPACITY), load - demand[torch.arange(BATCH), nxt])
        cur = nxt
    tour_len = tour_len + (coords[:, 0] - coords[torch.arange(BATCH), cur]).norm(dim=-1)

    baseline = critic(torch.cat([coords.flatten(1), demand], -1)).squeeze(-1)
    advantage = (tour_len - baseline).detach()

    policy_opt.zero_grad()
    policy_loss = sum((advantage * logp_t).mean() for logp_t in step_logps)
    policy_loss.backward()
    nn.utils.clip_grad_norm_(list(encoder.parameters()) + list(decoder.parameters()), 1.0)
    policy_opt.step()

    critic_loss = F.mse_loss(baseline, tour_len)
    critic_opt.zero_grad()
    critic_loss.backward()
    critic_opt.step()
    print(f"iter {it}: tour {tour_len.mean().item():.3f} critic {critic_loss.item():.4f}")
