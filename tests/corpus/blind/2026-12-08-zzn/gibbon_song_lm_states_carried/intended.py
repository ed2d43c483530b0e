"""Gibbon great-call note-sequence language model: LSTM states carried from chunk to chunk.

Reduced from yunjey/pytorch-tutorial issue #90, "language model detach(states)"
(https://github.com/yunjey/pytorch-tutorial/issues/90).

The author was studying the tutorial's RNN language model (embedding, one-layer LSTM, linear
decoder, Adam, gradient clipping at 0.5) trained on Penn Treebank cut into ``seq_length`` chunks,
with the LSTM states ``(h, c)`` initialised to zeros once per epoch and handed from one chunk to the
next. They asked why the loop needs ``states = detach(states)`` before each forward and what it
does. Without it, the states that enter chunk two still hang on chunk one's graph, which the first
``loss.backward()`` has already freed, so the second backward fails with "RuntimeError: Trying to
backward through the graph a second time ... Specify retain_graph=True". The tutorial's intent, as
its own code has it, is truncated backpropagation through time: carry the *values* of the states
into the next chunk and cut their history with ``detach``.

Reduction: the corpus is the note sequence of gibbon great calls transcribed from a passive
acoustic monitoring array (note types such as wa, hoo, leading and trailing notes of the female
great-call phrase, and the male coda) as integer tokens, laid out ``batch_size`` streams wide as in
the tutorial's ``Corpus.get_data``. The script is the tutorial's loop with the detach line
missing, which is the version the question is about.
"""
import torch
import torch.nn as nn

torch.manual_seed(90)

# Hyper parameters
embed_size = 16
hidden_size = 32
num_layers = 1
num_epochs = 2
batch_size = 4
seq_length = 6
learning_rate = 0.002
NOTE_TYPES = ["<bout>", "wa", "hoo", "lead", "trail", "climax", "coda", "silence"]


def make_note_corpus(n_tokens, vocab_size, batch_size):
    """A first-order Markov chain over note types, cut into batch_size parallel streams."""
    transition = torch.softmax(torch.randn(vocab_size, vocab_size) * 2.0, dim=1)
    tokens = [0]
    for _ in range(n_tokens - 1):
        tokens.append(int(torch.multinomial(transition[tokens[-1]], 1)))
    ids = torch.tensor(tokens)
    num_batches = ids.size(0) // batch_size
    return ids[: num_batches * batch_size].view(batch_size, -1)


class RNNLM(nn.Module):
    def __init__(self, vocab_size, embed_size, hidden_size, num_layers):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)
        self.init_weights()

    def init_weights(self):
        self.embed.weight.data.uniform_(-0.1, 0.1)
        self.linear.bias.data.fill_(0)
        self.linear.weight.data.uniform_(-0.1, 0.1)

    def forward(self, x, h):
        x = self.embed(x)
        out, h = self.lstm(x, h)
        out = out.reshape(out.size(0) * out.size(1), out.size(2))
        out = self.linear(out)
        return out, h


def detach(states):
    return [state.detach() for state in states]


def main():
    vocab_size = len(NOTE_TYPES)
    ids = make_note_corpus(400, vocab_size, batch_size)
    model = RNNLM(vocab_size, embed_size, hidden_size, num_layers)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

    for epoch in range(num_epochs):
        # initial hidden and cell states
        states = (torch.zeros(num_layers, batch_size, hidden_size),
                  torch.zeros(num_layers, batch_size, hidden_size))
        for i in range(0, ids.size(1) - seq_length, seq_length):
            inputs = ids[:, i:i + seq_length]
            targets = ids[:, (i + 1):(i + 1) + seq_length]

            # forward (truncated backpropagation: keep the values, cut the history)
            states = detach(states)
            outputs, states = model(inputs, states)
            loss = criterion(outputs, targets.reshape(-1))

            # backward and optimize
            model.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()

            step = (i + 1) // seq_length
            if step % 5 == 0:
                print(f"Epoch [{epoch + 1}/{num_epochs}], Step [{step}], Loss: {loss.item():.4f}")


if __name__ == "__main__":
    main()
