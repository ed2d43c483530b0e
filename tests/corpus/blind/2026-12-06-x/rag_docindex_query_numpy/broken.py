"""Retrieval-augmented generation: a question encoder and a generator trained jointly (RAG-sequence).

Reduced from https://github.com/docarray/docarray/pull/1429 . docarray's Document Index converted every
query passed to ``find()`` with ``BaseDocIndex._to_numpy``, which called ``val.numpy()`` on a torch
tensor. Queries are usually fresh outputs of an encoder, which require grad, so searching the index with
them raised "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
The PR made the conversion ``val.detach().numpy()``: the nearest-neighbour search needs the values only.

The training setting is the writer's: a document index holds the embeddings of a small knowledge base
(built once by a frozen document encoder, as RAG does); for each question the top-k documents are
retrieved with the question embedding, their scores are recomputed in torch so that the retriever is
trained through the marginal likelihood p(y|x) = sum_z p(z|x) p(y|x,z), and the generator reads the
question with each retrieved document.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_ENT, N_REL, N_VAL, DIM, TOP_K = 40, 4, 12, 32, 4
VOCAB = N_ENT + N_REL + N_VAL + 1
QMARK = VOCAB - 1
facts = torch.randint(0, N_VAL, (N_ENT, N_REL))  # the knowledge base: value of relation r for entity e


def ent_tok(e):
    return e


def rel_tok(r):
    return N_ENT + r


def val_tok(v):
    return N_ENT + N_REL + v


# one document per (entity, relation): "entity relation value"
doc_tokens = torch.tensor([[ent_tok(e), rel_tok(r), val_tok(int(facts[e, r]))] for e in range(N_ENT) for r in range(N_REL)])


class DocIndex:
    """In-memory vector index in the manner of docarray's Document Index: numpy storage, exact search."""

    def __init__(self):
        self._embeddings = None

    @staticmethod
    def _to_numpy(val):
        if isinstance(val, np.ndarray):
            return val
        if isinstance(val, (list, tuple)):
            return np.array(val)
        if isinstance(val, torch.Tensor):
            return val.numpy()
        raise TypeError(f"cannot index {type(val)}")

    def index(self, embeddings):
        self._embeddings = self._to_numpy(embeddings).astype(np.float32)

    def find(self, query, limit):
        q = self._to_numpy(query)
        scores = q @ self._embeddings.T
        ids = np.argsort(-scores, axis=1)[:, :limit]
        return ids, np.take_along_axis(scores, ids, axis=1)


class BagEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.proj = nn.Sequential(nn.Linear(DIM, DIM), nn.Tanh(), nn.Linear(DIM, DIM))

    def forward(self, tokens):
        return self.proj(self.emb(tokens).mean(1))


class Generator(nn.Module):
    """Reads the question and one retrieved document, predicts the answer token."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.mlp = nn.Sequential(nn.Linear(2 * DIM + 3 * DIM, 128), nn.ReLU(), nn.Linear(128, VOCAB))

    def forward(self, question, docs):  # question [B, 3], docs [B, K, 3]
        b, k, _ = docs.shape
        q = self.emb(question).mean(1, keepdim=True).expand(b, k, DIM)
        d = self.emb(docs)  # [B, K, 3, DIM]
        return self.mlp(torch.cat([q, q * d.mean(2), d.flatten(2)], -1))  # [B, K, VOCAB]


doc_encoder = BagEncoder()
question_encoder = BagEncoder()
question_encoder.load_state_dict(doc_encoder.state_dict())  # both start from the same checkpoint
generator = Generator()
with torch.no_grad():
    doc_embeddings = doc_encoder(doc_tokens)
index = DocIndex()
index.index(doc_embeddings)

retriever_opt = torch.optim.Adam(question_encoder.parameters(), lr=1e-3)
generator_opt = torch.optim.Adam(generator.parameters(), lr=3e-3)

for step in range(150):
    ent = torch.randint(0, N_ENT, (32,))
    rel = torch.randint(0, N_REL, (32,))
    questions = torch.stack([ent, N_ENT + rel, torch.full_like(ent, QMARK)], 1)
    answers = N_ENT + N_REL + facts[ent, rel]

    q_emb = question_encoder(questions)
    doc_ids, _ = index.find(q_emb, limit=TOP_K)
    doc_ids = torch.from_numpy(doc_ids)
    retrieved = doc_embeddings[doc_ids]  # [B, K, DIM], fixed index vectors
    doc_scores = torch.einsum("bd,bkd->bk", q_emb, retrieved)
    gen_logits = generator(questions, doc_tokens[doc_ids])
    answer_logp = gen_logits.log_softmax(-1).gather(-1, answers[:, None, None].expand(-1, TOP_K, 1)).squeeze(-1)
    loss = -torch.logsumexp(doc_scores.log_softmax(-1) + answer_logp, dim=1).mean()

    retriever_opt.zero_grad()
    generator_opt.zero_grad()
    loss.backward()
    retriever_opt.step()
    generator_opt.step()
    if step % 50 == 0:
        gold = (doc_ids == (ent * N_REL + rel)[:, None]).any(1).float().mean()
        print(f"step {step}: nll {loss.item():.3f} gold doc in top-{TOP_K} {gold:.2f}")
