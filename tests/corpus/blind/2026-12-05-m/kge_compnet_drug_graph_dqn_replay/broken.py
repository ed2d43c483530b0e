"""CompNet-style medication recommendation: DQN over a drug knowledge graph encoded by an R-GCN.

Reduced from https://github.com/WOW5678/CompNet/issues/2 (``main_CompNet.py``).
The author trains an agent that recommends a medication combination one drug at
a time: two CNNs encode a patient record's diagnosis and procedure codes, an
R-GCN (basis decomposition, two relation types: co-prescribed and
drug-drug interaction) encodes the graph of drugs selected so far, a gated
fusion of both is the DQN's input, and the DQN carries its own hidden state
between picks. Transitions go into a replay memory; every step a mini-batch is
replayed, the TD loss is backwarded and one Adam optimizer steps all four
networks (both CNNs, the R-GCN and the DQN); a target DQN is synced from time
to time.

Synthetic data: random code sequences for records, random drug labels and a
random interaction graph; epsilon-greedy draws from numpy.
"""

import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)
random.seed(0)

N_DIAG, N_PROC, N_DRUGS = 30, 20, 8
EMB_SIZE = 16
STATE_SIZE = EMB_SIZE
ACTION_SIZE = N_DRUGS + 1  # last action ends the prescription
GAMMA = 0.9
BATCH_SIZE = 4
TARGET_UPDATE_ITER = 5
MAX_STEP = 4


class CNN(nn.Module):
    def __init__(self, vocab_size, emb_size, num_channels):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.conv = nn.Conv1d(emb_size, num_channels, 3, padding=1)
        self.out = nn.Linear(num_channels, emb_size)

    def forward(self, codes):
        x = self.embedding(codes).t().unsqueeze(0)
        x = F.relu(self.conv(x)).max(dim=2)[0]
        return self.out(x)  # (1, emb_size)


class GCNLayer(nn.Module):
    def __init__(self, in_size, out_size, total_rel=2, n_basis=2):
        super().__init__()
        self.basis_weights = nn.Parameter(torch.empty(n_basis, in_size, out_size))
        self.basis_coeff = nn.Parameter(torch.empty(total_rel, n_basis))
        nn.init.xavier_uniform_(self.basis_weights)
        nn.init.xavier_uniform_(self.basis_coeff)

    def forward(self, inp, adj_mat_list):
        rel_weights = torch.einsum("ij,jmn->imn", self.basis_coeff, self.basis_weights)
        weights = rel_weights.view(rel_weights.shape[0] * rel_weights.shape[1], rel_weights.shape[2])
        if inp is not None:
            tmp = torch.cat([torch.mm(mat, inp) for mat in adj_mat_list], 1)
        else:
            tmp = torch.cat(adj_mat_list, 1)
        return torch.matmul(tmp, weights)


class RGCN(nn.Module):
    def __init__(self, layer_sizes, total_ent):
        super().__init__()
        self.layers = nn.ModuleList()
        size = total_ent
        for out in layer_sizes:
            self.layers.append(GCNLayer(size, out))
            size = out

    def forward(self, adj_mat_list):
        out = None
        final_rep = []
        for i, layer in enumerate(self.layers):
            if i != 0:
                out = F.relu(out)
            out = layer(out, adj_mat_list)
            final_rep.append(out)
        final_rep = torch.cat(final_rep, 1)
        return out, torch.sum(final_rep, 0).view(-1, final_rep.shape[1])


class DQN(nn.Module):
    def __init__(self, state_size, action_size):
        super().__init__()
        self.W = nn.Parameter(torch.randn(state_size, state_size) * 0.1)
        self.U = nn.Parameter(torch.randn(state_size, state_size) * 0.1)
        self.fc1 = nn.Linear(state_size, 32)
        self.fc2 = nn.Linear(32, action_size)
        self.learn_step_counter = 0

    def forward(self, x_):
        x_t, h_t_1 = x_
        state = torch.sigmoid(torch.mm(self.W, x_t.t()) + torch.mm(self.U, h_t_1.t()))
        return state.t(), self.fc2(F.relu(self.fc1(state.t())))


def get_adjacencies(selected, ddi_pairs):
    """Relation 0: drugs prescribed together so far; relation 1: known interactions among them."""
    co = torch.eye(N_DRUGS)
    ddi = torch.eye(N_DRUGS)
    for a in selected:
        for b in selected:
            if a != b:
                co[a, b] = 1.0
                if (a, b) in ddi_pairs:
                    ddi[a, b] = 1.0
    return [co, ddi]


class Agent:
    def __init__(self, ddi_pairs):
        self.epsilon = 0.5
        self.ddi_pairs = ddi_pairs
        self.cnn_diagnosis = CNN(N_DIAG, EMB_SIZE, 24)
        self.cnn_procedure = CNN(N_PROC, EMB_SIZE, 24)
        self.rgcn = RGCN([EMB_SIZE // 2, EMB_SIZE // 2], N_DRUGS)
        self.model = DQN(STATE_SIZE, ACTION_SIZE)
        self.target_model = DQN(STATE_SIZE, ACTION_SIZE)
        self.model_params = (
            list(self.cnn_diagnosis.parameters())
            + list(self.cnn_procedure.parameters())
            + list(self.rgcn.parameters())
            + list(self.model.parameters())
        )
        self.optimizer = torch.optim.Adam(self.model_params, lr=1e-3)
        self.loss = nn.MSELoss()
        self.memory = []
        self.update_target_model()

    def update_target_model(self):
        self.target_model.load_state_dict(self.model.state_dict())

    def reset(self, record):
        return torch.cat((self.cnn_diagnosis(record[0]), self.cnn_procedure(record[1])), 0)  # (2, EMB)

    def graph(self, selected):
        _, g = self.rgcn(get_adjacencies(selected, self.ddi_pairs))
        return g  # (1, EMB)

    def new_state(self, f, g):
        a = F.softmax(torch.mm(f, g.t()), dim=0)
        return torch.mm(a.t(), f) + g

    def act(self, x, h, selected):
        if np.random.rand() < self.epsilon:
            while True:
                action = np.random.randint(ACTION_SIZE)
                if action not in selected:
                    return action, h
        next_h, output = self.model((x, h))
        with torch.no_grad():
            output = output.clone()
            output[0, selected] = -1e9
            return int(output.argmax(1)), next_h

    def replay(self):
        if self.model.learn_step_counter % TARGET_UPDATE_ITER == 0:
            self.update_target_model()
        self.model.learn_step_counter += 1
        batch_idx = np.random.choice(len(self.memory), BATCH_SIZE)
        b_x = torch.cat([self.memory[i][0] for i in batch_idx], 0)
        b_h = torch.cat([self.memory[i][1] for i in batch_idx], 0)
        b_action = torch.LongTensor([self.memory[i][2] for i in batch_idx]).unsqueeze(1)
        b_reward = torch.FloatTensor([self.memory[i][3] for i in batch_idx])
        b_next_x = torch.cat([self.memory[i][4] for i in batch_idx], 0)
        b_next_h = torch.cat([self.memory[i][5] for i in batch_idx], 0)

        _, q_eval = self.model((b_x, b_h))
        q_eval = q_eval.gather(1, b_action)
        _, q_next = self.target_model((b_next_x, b_next_h))
        q_next = q_next.detach()
        q_target = (b_reward + GAMMA * q_next.max(1)[0]).unsqueeze(1)
        loss = self.loss(q_eval, q_target)

        self.optimizer.zero_grad()
        loss.backward(retain_graph=True)
        self.optimizer.step()
        return loss


def reward_for(action, selected, labels):
    if action == ACTION_SIZE - 1:
        return 2 if len(selected) == len(labels) else -2
    return 1 if action in labels and action not in selected else -1


def main():
    records = [
        (torch.randint(0, N_DIAG, (6,)), torch.randint(0, N_PROC, (4,)), set(random.sample(range(N_DRUGS), 3)))
        for _ in range(6)
    ]
    ddi_pairs = {(0, 3), (3, 0), (2, 5), (5, 2)}
    agent = Agent(ddi_pairs)

    for epoch in range(2):
        for diag, proc, labels in records:
            f = agent.reset((diag, proc))
            selected = []
            g = agent.graph(selected)
            h = torch.zeros(1, STATE_SIZE)
            for step in range(MAX_STEP):
                x = agent.new_state(f, g)
                action, next_h = agent.act(x, h, selected)
                reward = reward_for(action, selected, labels)
                if action == ACTION_SIZE - 1:
                    agent.memory.append((x, h, action, reward, x, next_h))
                    break
                selected.append(action)
                g = agent.graph(selected)
                next_x = agent.new_state(f, g)
                agent.memory.append((x, h, action, reward, next_x, next_h))
                x, h = next_x, next_h
                if len(agent.memory) >= BATCH_SIZE:
                    loss = agent.replay()
            print(f"epoch {epoch}: last loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
