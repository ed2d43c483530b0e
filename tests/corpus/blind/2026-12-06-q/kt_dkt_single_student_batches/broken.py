"""Deep Knowledge Tracing (DKT) on student answer sequences, EduKTM layout.

Reduced from https://github.com/bigdata-ustc/EduKTM/issues/19: the author trains EduKTM's `DKT`
(an RNN over one-hot (question, correctness) interactions, a sigmoid layer predicting the next
answer for every question) through its `train()` method, with a DataLoader of batch size 1 instead
of the example's 64. The loss of a batch is the sum of the students' BCE losses on their next
answers, built by `process_raw_pred`. Synthetic answer sequences of varying length stand in for
ASSISTments 2009.
"""

import numpy as np
import torch
import torch.utils.data as Data
from torch import nn

torch.manual_seed(1)

NUM_QUESTIONS = 10
MAX_STEP = 12
NUM_STUDENTS = 12
HIDDEN_SIZE = 16
NUM_LAYERS = 1
BATCH_SIZE = 1


class Net(nn.Module):
    def __init__(self, num_questions, hidden_size, num_layers):
        super(Net, self).__init__()
        self.hidden_dim = hidden_size
        self.layer_dim = num_layers
        self.rnn = nn.RNN(num_questions * 2, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(self.hidden_dim, num_questions)

    def forward(self, x):
        h0 = torch.zeros(self.layer_dim, x.size(0), self.hidden_dim)
        out, _ = self.rnn(x, h0)
        res = torch.sigmoid(self.fc(out))
        return res


def process_raw_pred(raw_question_matrix, raw_pred, num_questions: int) -> tuple:
    questions = torch.nonzero(raw_question_matrix)[1:, 1] % num_questions
    length = questions.shape[0]
    pred = raw_pred[:length]
    pred = pred.gather(1, questions.view(-1, 1)).flatten()
    truth = torch.nonzero(raw_question_matrix)[1:, 1] // num_questions
    return pred, truth


class DKT:
    def __init__(self, num_questions, hidden_size, num_layers):
        self.num_questions = num_questions
        self.dkt_model = Net(num_questions, hidden_size, num_layers)

    def train(self, train_data, *, epoch: int, lr=0.002) -> ...:
        loss_function = nn.BCELoss()
        optimizer = torch.optim.Adam(self.dkt_model.parameters(), lr)

        for e in range(epoch):
            losses = []
            for batch in train_data:
                integrated_pred = self.dkt_model(batch)
                batch_size = batch.shape[0]
                loss = torch.Tensor([0.0])
                for student in range(batch_size):
                    pred, truth = process_raw_pred(batch[student], integrated_pred[student], self.num_questions)
                    if pred.shape[0] != 0:
                        loss += loss_function(pred, truth.float())

                # back propagation
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

                losses.append(loss.mean().item())
            print("[Epoch %d] LogisticLoss: %.6f" % (e, float(np.mean(losses))))


def make_sequences(num_students, max_step, num_questions):
    """One-hot interaction matrices: row t holds question q at column q (wrong) or q + num_questions (right)."""
    lengths = torch.randint(1, max_step + 1, (num_students,))
    data = torch.zeros(num_students, max_step, 2 * num_questions)
    for s in range(num_students):
        questions = torch.randint(0, num_questions, (int(lengths[s]),))
        correct = torch.randint(0, 2, (int(lengths[s]),))
        for t in range(int(lengths[s])):
            data[s, t, int(questions[t]) + int(correct[t]) * num_questions] = 1.0
    return data


def get_data_loader(data, batch_size, shuffle=False):
    return Data.DataLoader(data, batch_size=batch_size, shuffle=shuffle)


if __name__ == "__main__":
    train_loader = get_data_loader(make_sequences(NUM_STUDENTS, MAX_STEP, NUM_QUESTIONS), BATCH_SIZE)
    dkt = DKT(NUM_QUESTIONS, HIDDEN_SIZE, NUM_LAYERS)
    dkt.train(train_loader, epoch=5)
