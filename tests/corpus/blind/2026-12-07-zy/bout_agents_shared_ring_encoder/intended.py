"""Two sumo wrestlers as learning agents over a shared ring-state encoder.

Source: https://discuss.pytorch.org/t/i-am-training-my-multi-agents-reinforcement-learning-project-and-i-got-an-error-trying-to-backward-through-the-graph-a-second-time/152352
The author trained several agents in one loop: the observation was encoded once
per step and then each agent, in turn, computed its own loss, called backward
and stepped its optimizer; the second agent's backward raised "Trying to
backward through the graph a second time". Reduced here to a bout simulator in
which the east and west rikishi each pick a technique (push, grip, pull,
sidestep) from a shared encoding of the ring state, trained by policy gradient
on recorded bout outcomes, one optimizer per wrestler plus one for the encoder.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

SETTINGS = dict(n_bouts=64, state_dim=10, hidden=32, n_moves=4, batch=16, rounds=2, lr=1e-3)


def recorded_bouts(s):
    g = torch.Generator().manual_seed(5)
    state = torch.randn(s["n_bouts"], s["state_dim"], generator=g)
    east_move = torch.randint(0, s["n_moves"], (s["n_bouts"],), generator=g)
    west_move = torch.randint(0, s["n_moves"], (s["n_bouts"],), generator=g)
    edge = state[:, 0] - state[:, 1] + 0.3 * (east_move == 0).float() - 0.3 * (west_move == 2).float()
    east_won = (edge + 0.2 * torch.randn(s["n_bouts"], generator=g) > 0).float()
    return state, east_move, west_move, east_won


class RingEncoder(nn.Module):
    def __init__(self, state_dim, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(state_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())

    def forward(self, state):
        return self.net(state)


class Rikishi:
    def __init__(self, name, hidden, n_moves, lr):
        self.name = name
        self.policy = nn.Linear(hidden, n_moves)
        self.opt = torch.optim.Adam(self.policy.parameters(), lr=lr)

    def pg_loss(self, ring_code, moves, reward):
        logp = F.log_softmax(self.policy(ring_code), dim=-1)
        chosen = logp.gather(1, moves.unsqueeze(1)).squeeze(1)
        return -(chosen * (reward - reward.mean())).mean()


def main():
    torch.manual_seed(0)
    s = SETTINGS
    state, east_move, west_move, east_won = recorded_bouts(s)
    encoder = RingEncoder(s["state_dim"], s["hidden"])
    enc_opt = torch.optim.Adam(encoder.parameters(), lr=s["lr"])
    east = Rikishi("east", s["hidden"], s["n_moves"], s["lr"])
    west = Rikishi("west", s["hidden"], s["n_moves"], s["lr"])

    for rnd in range(s["rounds"]):
        for i in range(0, s["n_bouts"], s["batch"]):
            sl = slice(i, i + s["batch"])
            enc_opt.zero_grad()
            east.opt.zero_grad()
            west.opt.zero_grad()
            ring_code = encoder(state[sl])
            east_loss = east.pg_loss(ring_code, east_move[sl], 2 * east_won[sl] - 1)
            west_loss = west.pg_loss(ring_code, west_move[sl], 1 - 2 * east_won[sl])
            (east_loss + west_loss).backward()
            east.opt.step()
            west.opt.step()
            enc_opt.step()
        print(f"round {rnd}: east {east_loss.item():.4f} west {west_loss.item():.4f}")


if __name__ == "__main__":
    main()
