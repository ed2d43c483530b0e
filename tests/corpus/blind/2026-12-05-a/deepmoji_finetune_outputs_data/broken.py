"""Fine-tuning a DeepMoji-style classifier (embeddings, two BiLSTMs, attention) on a binary task.

Source: https://github.com/huggingface/torchMoji/issues/21
"loss don't go down when finetune and about requires_grad option in backward()".
The author fine-tuned torchMoji (``examples/finetune_youtube_last``) on SS-Youtube; the model's
forward adapts its return format to the input type, and the training batches are LongTensors.
Reduced: a small vocabulary, random token ids, one epoch of a few batches.
"""

import torch
import torch.nn as nn
from torch.autograd import Variable
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence
from torch.utils.data import DataLoader, TensorDataset

NB_TOKENS = 120


class Attention(nn.Module):
    def __init__(self, attention_size):
        super().__init__()
        self.attention_vector = nn.Parameter(torch.FloatTensor(attention_size))
        self.attention_vector.data.normal_(std=0.05)

    def forward(self, inputs, input_lengths):
        logits = inputs.matmul(self.attention_vector)
        unnorm_ai = (logits - logits.max()).exp()
        max_len = unnorm_ai.size(1)
        idxes = torch.arange(0, max_len, out=torch.LongTensor(max_len)).unsqueeze(0)
        mask = Variable((idxes < input_lengths.unsqueeze(1)).float())
        masked_weights = unnorm_ai * mask
        att_sums = masked_weights.sum(dim=1, keepdim=True)
        attentions = masked_weights.div(att_sums)
        weighted = torch.mul(inputs, attentions.unsqueeze(-1).expand_as(inputs))
        representations = weighted.sum(dim=1)
        return representations, attentions


class TorchMoji(nn.Module):
    def __init__(
        self, nb_classes, nb_tokens, embedding_dim=16, hidden_size=12, final_dropout_rate=0.0, embed_dropout_rate=0.0
    ):
        super().__init__()
        self.hidden_size = hidden_size
        self.nb_classes = nb_classes
        self.add_module("embed", nn.Embedding(nb_tokens, embedding_dim))
        self.add_module("embed_dropout", nn.Dropout2d(embed_dropout_rate))
        self.add_module("lstm_0", nn.LSTM(embedding_dim, hidden_size, batch_first=True, bidirectional=True))
        self.add_module("lstm_1", nn.LSTM(hidden_size * 2, hidden_size, batch_first=True, bidirectional=True))
        attention_size = 4 * hidden_size + embedding_dim
        self.add_module("attention_layer", Attention(attention_size=attention_size))
        self.add_module("final_dropout", nn.Dropout(final_dropout_rate))
        self.add_module(
            "output_layer",
            nn.Sequential(
                nn.Linear(attention_size, nb_classes if self.nb_classes > 2 else 1),
                nn.Softmax(dim=-1) if self.nb_classes > 2 else nn.Sigmoid(),
            ),
        )

    def forward(self, input_seqs):
        # Check if we have Torch.LongTensor inputs or not Torch.Variable (assume Numpy array in this case), take note to return same format
        return_numpy = False
        return_tensor = False
        if isinstance(input_seqs, torch.LongTensor):
            input_seqs = Variable(input_seqs)
            return_tensor = True
        elif not isinstance(input_seqs, torch.Tensor):
            input_seqs = Variable(torch.from_numpy(input_seqs.astype("int64")).long())
            return_numpy = True

        ho = self.lstm_0.weight_hh_l0.data.new(2, input_seqs.size()[0], self.hidden_size).zero_()
        co = self.lstm_0.weight_hh_l0.data.new(2, input_seqs.size()[0], self.hidden_size).zero_()

        # Reorder batch by sequence length
        input_lengths = torch.LongTensor(
            [torch.max(input_seqs[i, :].data.nonzero()) + 1 for i in range(input_seqs.size()[0])]
        )
        input_lengths, perm_idx = input_lengths.sort(0, descending=True)
        input_seqs = input_seqs[perm_idx][:, : input_lengths.max()]

        # Pack sequence and work on data tensor to reduce embeddings/dropout computations
        packed_input = pack_padded_sequence(input_seqs, input_lengths.cpu().numpy(), batch_first=True)
        hidden = (Variable(ho, requires_grad=False), Variable(co, requires_grad=False))

        # Embed with an activation function to bound the values of the embeddings
        x = self.embed(packed_input.data)
        x = nn.Tanh()(x)
        x = self.embed_dropout(x)
        packed_input = PackedSequence(x, packed_input.batch_sizes)

        # skip-connection from embedding to output eases gradient-flow and allows access to lower-level features
        lstm_0_output, _ = self.lstm_0(packed_input, hidden)
        lstm_1_output, _ = self.lstm_1(lstm_0_output, hidden)
        packed_input = PackedSequence(
            torch.cat((lstm_1_output.data, lstm_0_output.data, packed_input.data), dim=1), packed_input.batch_sizes
        )
        input_seqs, _ = pad_packed_sequence(packed_input, batch_first=True)
        x, _att_weights = self.attention_layer(input_seqs, input_lengths)

        # output class probabilities
        x = self.final_dropout(x)
        outputs = self.output_layer(x)

        # Reorder output
        reorered = Variable(outputs.data.new(outputs.size()))
        reorered[perm_idx] = outputs
        outputs = reorered

        # Adapt return format if needed
        if return_tensor:
            outputs = outputs.data
        if return_numpy:
            outputs = outputs.data.numpy()
        return outputs


def fit_model(model, loss_op, optim_op, train_gen, epochs):
    for epoch in range(epochs):
        model.train()
        for i, data in enumerate(train_gen):
            X_train, y_train = data
            X_train = Variable(X_train, requires_grad=False)
            y_train = Variable(y_train, requires_grad=False)
            model.train()
            optim_op.zero_grad()
            output = model(X_train)
            loss = loss_op(output, y_train)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1)
            optim_op.step()
            print(f"epoch {epoch} batch {i} loss {loss.item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    n, maxlen = 48, 10
    lengths = torch.randint(3, maxlen + 1, (n,))
    texts = torch.randint(1, NB_TOKENS, (n, maxlen)) * (torch.arange(maxlen) < lengths.unsqueeze(1)).long()
    labels = torch.randint(0, 2, (n, 1)).float()
    train_gen = DataLoader(TensorDataset(texts, labels), batch_size=8, shuffle=True)

    model = TorchMoji(nb_classes=2, nb_tokens=NB_TOKENS)
    loss_op = nn.BCELoss(size_average=False)
    optim_op = torch.optim.Adam(model.parameters(), lr=1e-3)
    fit_model(model, loss_op, optim_op, train_gen, epochs=1)
