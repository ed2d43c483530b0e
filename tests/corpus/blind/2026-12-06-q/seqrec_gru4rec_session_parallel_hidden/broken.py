"""GRU4Rec (session-based recommendation) with session-parallel mini-batches and the TOP1 ranking loss.

Reduced from https://github.com/yhs968/pyGRU4REC/issues/8: the author trains pyGRU4REC's `GRU4REC`
(one-hot item input, a GRU layer, tanh item scores, TOP1 loss over the items of the mini-batch as
sampled negatives) with its `run_epoch`, asking for the loss at time t to reach all earlier clicks of
the session: the hidden state is carried from one session-parallel mini-batch to the next and zeroed
where a session ends. Synthetic click sessions stand in for RecSys Challenge 2015.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)

N_ITEMS = 30
N_SESSIONS = 24
BATCH_SIZE = 4
HIDDEN_SIZE = 16


class GRU(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, num_layers=1, p_dropout_hidden=0, batch_size=50):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.num_layers = num_layers
        self.dropout_hidden = nn.Dropout(p_dropout_hidden)
        self.batch_size = batch_size
        self.onehot_buffer = torch.zeros(batch_size, output_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.tanh = nn.Tanh()
        self.gru = nn.GRU(input_size, hidden_size, num_layers)

    def forward(self, input, target, hidden):
        embedded = self.onehot_encode(input)
        embedded = embedded.unsqueeze(0)  # (1,B,C)
        output, hidden = self.gru(embedded, hidden)  # (num_layers,B,H)
        output = output.view(-1, output.size(-1))  # (B,H)
        output = self.dropout_hidden(output)
        logit = self.tanh(self.h2o(output))  # (B,C)
        return logit, hidden

    def onehot_encode(self, input):
        self.onehot_buffer.zero_()
        index = input.view(-1, 1)
        return self.onehot_buffer.scatter_(1, index, 1)

    def init_hidden(self):
        return torch.zeros(self.num_layers, self.batch_size, self.hidden_size)


def TOP1Loss(logit):
    diff = -(logit.diag().view(-1, 1).expand_as(logit) - logit)
    return torch.sigmoid(diff).mean() + torch.sigmoid(logit**2).mean()


class SessionDataLoader:
    """Session-parallel mini-batches: position b follows one session; a finished session is replaced by the next."""

    def __init__(self, sessions, batch_size=50):
        self.item_idx = np.concatenate(sessions)
        self.click_offsets = np.concatenate([[0], np.cumsum([len(s) for s in sessions])])
        self.session_idx_arr = np.arange(len(sessions))
        self.batch_size = batch_size

    def __iter__(self):
        click_offsets = self.click_offsets
        session_idx_arr = self.session_idx_arr
        iters = np.arange(self.batch_size)
        maxiter = iters.max()
        start = click_offsets[session_idx_arr[iters]]
        end = click_offsets[session_idx_arr[iters] + 1]
        mask = []
        finished = False
        item_idx = self.item_idx
        while not finished:
            minlen = (end - start).min()
            idx_target = item_idx[start]
            for i in range(minlen - 1):
                idx_input = idx_target
                idx_target = item_idx[start + i + 1]
                input = torch.LongTensor(idx_input)
                target = torch.LongTensor(idx_target)
                if i == 1:
                    mask = []
                yield input, target, mask
            start = start + (minlen - 1)
            mask = np.arange(len(iters))[(end - start) <= 1]
            for idx in mask:
                maxiter += 1
                if maxiter >= len(click_offsets) - 1:
                    finished = True
                    break
                iters[idx] = maxiter
                start[idx] = click_offsets[session_idx_arr[maxiter]]
                end[idx] = click_offsets[session_idx_arr[maxiter] + 1]


class GRU4REC:
    def __init__(self, input_size, hidden_size, output_size, lr=0.05, batch_size=50, p_dropout_hidden=0.25):
        self.batch_size = batch_size
        self.gru = GRU(input_size, hidden_size, output_size, p_dropout_hidden=p_dropout_hidden, batch_size=batch_size)
        self.optimizer = torch.optim.Adagrad(self.gru.parameters(), lr=lr)
        self.loss_fn = TOP1Loss

    def run_epoch(self, sessions, training=True):
        losses = []
        optimizer = self.optimizer
        hidden = self.gru.init_hidden()

        def reset_hidden(hidden, mask):
            """Helper function that resets hidden state when some sessions terminate"""
            if len(mask) != 0:
                hidden[:, mask, :] = 0
            return hidden

        loader = SessionDataLoader(sessions, batch_size=self.batch_size)
        for input, target, mask in loader:
            # reset the hidden states if some sessions have just terminated
            hidden = reset_hidden(hidden, mask)
            logit, hidden = self.gru(input, target, hidden)
            logit_sampled = logit[:, target.view(-1)]
            loss = self.loss_fn(logit_sampled)
            losses.append(loss.item())
            if training:
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
        return float(np.mean(losses))


def make_sessions(n_sessions, n_items):
    lengths = np.random.randint(2, 7, size=n_sessions)
    return [np.random.randint(0, n_items, size=n) for n in lengths]


if __name__ == "__main__":
    sessions = make_sessions(N_SESSIONS, N_ITEMS)
    model = GRU4REC(N_ITEMS, HIDDEN_SIZE, N_ITEMS, batch_size=BATCH_SIZE)
    for epoch in range(2):
        print(f"epoch {epoch}: loss {model.run_epoch(sessions):.4f}")
