"""Named entity recognition with pooled contextual string embeddings (Flair's PooledFlairEmbeddings), fine-tuned.

Source: https://github.com/flairNLP/flair/issues/1633

The author trains a BiLSTM sequence tagger on top of PooledFlairEmbeddings: a character-level
language model gives each token a contextual embedding, and the pooled variant keeps a memory
of every word's past embeddings ('min' pooling over its occurrences during training) and
concatenates it to the current one. They ask for ``fine_tune=True`` so that the character
language model is trained with the tagger. Plain SGD on the tagger's parameters (embeddings
included), cross-entropy over the tags, mini-batches of synthetic sentences.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ "
TAGS = ["O", "B-PER", "I-PER", "B-LOC"]
VOCAB = ["Berlin", "Anna", "Maria", "Paris", "visited", "met", "the", "in", "and", "city", "with", "friends"]


class CharLM(nn.Module):
    """A (tiny) character-level language model: its hidden states are the contextual string embeddings."""

    def __init__(self, n_chars, char_dim=8, hidden=24):
        super().__init__()
        self.encoder = nn.Embedding(n_chars, char_dim)
        self.rnn = nn.LSTM(char_dim, hidden, batch_first=True)
        self.decoder = nn.Linear(hidden, n_chars)

    def get_representation(self, text):
        ids = torch.tensor([[CHARS.index(c) for c in text]])
        states, _ = self.rnn(self.encoder(ids))
        return states[0]


class FlairEmbeddings(nn.Module):
    def __init__(self, fine_tune=False):
        super().__init__()
        self.lm = CharLM(len(CHARS))
        self.fine_tune = fine_tune
        self.embedding_length = self.lm.rnn.hidden_size

    def embed(self, sentences):
        grad_context = torch.enable_grad() if self.fine_tune and self.training else torch.no_grad()
        out = []
        with grad_context:
            for sentence in sentences:
                text = " ".join(sentence)
                states = self.lm.get_representation(text)
                ends, pos = [], 0
                for word in sentence:
                    pos += len(word)
                    ends.append(pos - 1)
                    pos += 1
                out.append(states[ends])
        return out


class PooledFlairEmbeddings(nn.Module):
    def __init__(self, pooling="min", fine_tune=False):
        super().__init__()
        self.context_embeddings = FlairEmbeddings(fine_tune=fine_tune)
        self.aggregate_op = {"min": torch.min, "max": torch.max}[pooling]
        self.word_embeddings = {}
        self.embedding_length = 2 * self.context_embeddings.embedding_length

    def embed(self, sentences):
        local = self.context_embeddings.embed(sentences)
        if self.training:
            for sentence, vectors in zip(sentences, local):
                for word, local_embedding in zip(sentence, vectors):
                    if word not in self.word_embeddings:
                        self.word_embeddings[word] = local_embedding
                    else:
                        aggregated_embedding = self.aggregate_op(self.word_embeddings[word], local_embedding)
                        self.word_embeddings[word] = aggregated_embedding
        zero = torch.zeros(self.context_embeddings.embedding_length)
        out = []
        for sentence, vectors in zip(sentences, local):
            pooled = torch.stack([self.word_embeddings.get(word, zero) for word in sentence])
            out.append(torch.cat([vectors, pooled], dim=-1))
        return out


class SequenceTagger(nn.Module):
    def __init__(self, embeddings, hidden_size, n_tags):
        super().__init__()
        self.embeddings = embeddings
        self.rnn = nn.LSTM(embeddings.embedding_length, hidden_size, batch_first=True, bidirectional=True)
        self.linear = nn.Linear(2 * hidden_size, n_tags)

    def forward_loss(self, sentences, tags):
        embedded = self.embeddings.embed(sentences)
        padded = nn.utils.rnn.pad_sequence(embedded, batch_first=True)
        features, _ = self.rnn(padded)
        scores = self.linear(features)
        gold = nn.utils.rnn.pad_sequence(tags, batch_first=True, padding_value=-100)
        return F.cross_entropy(scores.reshape(-1, len(TAGS)), gold.reshape(-1), ignore_index=-100)


def make_corpus(n_sentences):
    corpus = []
    for _ in range(n_sentences):
        length = int(torch.randint(4, 8, (1,)))
        words = [VOCAB[int(i)] for i in torch.randint(0, len(VOCAB), (length,))]
        tags = torch.tensor([1 if w in ("Anna", "Maria") else 3 if w in ("Berlin", "Paris") else 0 for w in words])
        corpus.append((words, tags))
    return corpus


embeddings = PooledFlairEmbeddings(pooling="min", fine_tune=True)
tagger = SequenceTagger(embeddings, hidden_size=16, n_tags=len(TAGS))
optimizer = torch.optim.SGD(tagger.parameters(), lr=0.1)
corpus = make_corpus(24)

tagger.train()
for epoch in range(2):
    for start in range(0, len(corpus), 6):
        batch = corpus[start : start + 6]
        optimizer.zero_grad()
        loss = tagger.forward_loss([s for s, _ in batch], [t for _, t in batch])
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
