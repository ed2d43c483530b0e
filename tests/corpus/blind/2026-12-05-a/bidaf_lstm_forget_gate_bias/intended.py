"""BiDAF-style extractive QA: an LSTM wrapper that initialises its own gates, trained with Adadelta.

Source: https://github.com/galsang/BiDAF-pytorch/issues/30
"reset_params of class LSTM reports error".
The author trained BiDAF-pytorch (SQuAD span prediction) on a recent PyTorch; the model's LSTM
wrapper re-initialises its weights in ``reset_params`` and sets the forget-gate bias to 1.
Reduced: character embeddings, highway and attention-flow layers are left out; data are random.
Corrected: the re-initialisation runs under torch.no_grad(), as the nn.init functions it calls do.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class LSTM(nn.Module):
    def __init__(self, input_size, hidden_size, batch_first=False, num_layers=1, bidirectional=False, dropout=0.2):
        super().__init__()

        self.rnn = nn.LSTM(
            input_size=input_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
            bidirectional=bidirectional,
            batch_first=batch_first,
        )
        self.reset_params()
        self.dropout = nn.Dropout(p=dropout)

    @torch.no_grad()
    def reset_params(self):
        for i in range(self.rnn.num_layers):
            nn.init.orthogonal_(getattr(self.rnn, f"weight_hh_l{i}"))
            nn.init.kaiming_normal_(getattr(self.rnn, f"weight_ih_l{i}"))
            nn.init.constant_(getattr(self.rnn, f"bias_hh_l{i}"), val=0)
            nn.init.constant_(getattr(self.rnn, f"bias_ih_l{i}"), val=0)
            getattr(self.rnn, f"bias_hh_l{i}").chunk(4)[1].fill_(1)

            if self.rnn.bidirectional:
                nn.init.orthogonal_(getattr(self.rnn, f"weight_hh_l{i}_reverse"))
                nn.init.kaiming_normal_(getattr(self.rnn, f"weight_ih_l{i}_reverse"))
                nn.init.constant_(getattr(self.rnn, f"bias_hh_l{i}_reverse"), val=0)
                nn.init.constant_(getattr(self.rnn, f"bias_ih_l{i}_reverse"), val=0)
                getattr(self.rnn, f"bias_hh_l{i}_reverse").chunk(4)[1].fill_(1)

    def forward(self, x):
        x, x_len = x
        x = self.dropout(x)

        x_len_sorted, x_idx = torch.sort(x_len, descending=True)
        x_sorted = x.index_select(dim=0, index=x_idx)
        _, x_ori_idx = torch.sort(x_idx)

        x_packed = nn.utils.rnn.pack_padded_sequence(x_sorted, x_len_sorted, batch_first=True)
        x_packed, (h, _c) = self.rnn(x_packed)

        x = nn.utils.rnn.pad_packed_sequence(x_packed, batch_first=True, total_length=x.size(1))[0]
        x = x.index_select(dim=0, index=x_ori_idx)
        return x, h


class SpanReader(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.word_emb = nn.Embedding(args.vocab_size, args.word_dim)
        self.context_LSTM = LSTM(
            input_size=args.word_dim,
            hidden_size=args.hidden_size,
            bidirectional=True,
            batch_first=True,
            dropout=args.dropout,
        )
        self.modeling_LSTM = LSTM(
            input_size=args.hidden_size * 4,
            hidden_size=args.hidden_size,
            bidirectional=True,
            batch_first=True,
            dropout=args.dropout,
        )
        self.p1_weight = nn.Linear(args.hidden_size * 2, 1)
        self.p2_weight = nn.Linear(args.hidden_size * 2, 1)

    def forward(self, c_word, c_lens, q_word, q_lens):
        c = self.context_LSTM((self.word_emb(c_word), c_lens))[0]
        q = self.context_LSTM((self.word_emb(q_word), q_lens))[0]
        a = F.softmax(torch.bmm(c, q.transpose(1, 2)), dim=2)
        g = torch.cat([c, torch.bmm(a, q)], dim=-1)
        m = self.modeling_LSTM((g, c_lens))[0]
        p1 = self.p1_weight(m).squeeze(-1)
        p2 = self.p2_weight(m).squeeze(-1)
        return p1, p2


def make_batch(args):
    c_word = torch.randint(2, args.vocab_size, (args.batch_size, args.c_len))
    q_word = torch.randint(2, args.vocab_size, (args.batch_size, args.q_len))
    c_lens = torch.randint(args.c_len // 2, args.c_len + 1, (args.batch_size,))
    q_lens = torch.randint(args.q_len // 2, args.q_len + 1, (args.batch_size,))
    s_idx = (torch.rand(args.batch_size) * (c_lens - 1).float()).long()
    e_idx = torch.minimum(s_idx + 2, c_lens - 1)
    return c_word, c_lens, q_word, q_lens, s_idx, e_idx


def train(args):
    model = SpanReader(args)
    parameters = filter(lambda p: p.requires_grad, model.parameters())
    optimizer = torch.optim.Adadelta(parameters, lr=args.learning_rate)
    criterion = nn.CrossEntropyLoss()

    model.train()
    for iteration in range(args.iterations):
        c_word, c_lens, q_word, q_lens, s_idx, e_idx = make_batch(args)
        p1, p2 = model(c_word, c_lens, q_word, q_lens)
        optimizer.zero_grad()
        batch_loss = criterion(p1, s_idx) + criterion(p2, e_idx)
        batch_loss.backward()
        optimizer.step()
        print(f"iteration {iteration} loss {batch_loss.item():.3f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    parser = argparse.ArgumentParser()
    parser.add_argument("--vocab-size", dest="vocab_size", default=60, type=int)
    parser.add_argument("--word-dim", dest="word_dim", default=16, type=int)
    parser.add_argument("--hidden-size", dest="hidden_size", default=12, type=int)
    parser.add_argument("--dropout", default=0.2, type=float)
    parser.add_argument("--learning-rate", dest="learning_rate", default=0.5, type=float)
    parser.add_argument("--batch-size", dest="batch_size", default=6, type=int)
    parser.add_argument("--c-len", dest="c_len", default=14, type=int)
    parser.add_argument("--q-len", dest="q_len", default=6, type=int)
    parser.add_argument("--iterations", default=5, type=int)
    train(parser.parse_args([]))
