"""Text-to-SQL: schema-linking encoder over question, tables and columns, grammar-action decoder with a column-copy pointer.

Reduced from microsoft/DialoGPT issue #57 (https://github.com/microsoft/DialoGPT/issues/57): the author
ran the decoding code with gradients enabled and banned the [UNK] token by writing into each step's
logits in place (``next_token_logit[tokenizer.convert_tokens_to_ids('[UNK]')] = -float('Inf')``), the
per-step logits being outputs of an unbind of the model's output; torch refuses: "Output 0 of
UnbindBackward0 is a view and is being modified inplace". The training setting is the writer's: a
teacher-forced text-to-SQL parser whose per-step scores over grammar actions and schema columns are
walked step by step to forbid the UNK action before the cross-entropy.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB = 60          # question word pieces
SCHEMA_VOCAB = 40   # table/column name pieces
N_ACTIONS = 24      # grammar productions (SELECT, WHERE, agg ops, ...)
UNK_ACTION = 1
PAD_ACTION = 0
HID = 32


class SchemaLinkingEncoder(nn.Module):
    """Encode question tokens and schema items jointly, with a name-match feature linking them."""

    def __init__(self):
        super().__init__()
        self.word_emb = nn.Embedding(VOCAB, HID)
        self.schema_emb = nn.Embedding(SCHEMA_VOCAB, HID)
        self.kind_emb = nn.Embedding(3, HID)  # 0 question, 1 table, 2 column
        self.link_proj = nn.Linear(1, HID)
        layer = nn.TransformerEncoderLayer(HID, 4, 2 * HID, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1)

    def forward(self, question, tables, columns, link):
        q = self.word_emb(question) + self.kind_emb.weight[0]
        t = self.schema_emb(tables) + self.kind_emb.weight[1]
        c = self.schema_emb(columns) + self.kind_emb.weight[2] + self.link_proj(link.unsqueeze(-1))
        h = self.encoder(torch.cat([q, t, c], dim=1))
        nq, nt = question.size(1), tables.size(1)
        return h[:, :nq], h[:, nq + nt:]


class GrammarCopyDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.action_emb = nn.Embedding(N_ACTIONS, HID)
        self.cell = nn.GRUCell(2 * HID, HID)
        self.attn = nn.Linear(HID, HID, bias=False)
        self.action_out = nn.Linear(2 * HID, N_ACTIONS)
        self.col_query = nn.Linear(2 * HID, HID)

    def forward(self, q_enc, col_enc, prev_actions):
        state = q_enc.mean(1)
        ctx = torch.zeros_like(state)
        scores = []
        for t in range(prev_actions.size(1)):
            inp = torch.cat([self.action_emb(prev_actions[:, t]), ctx], -1)
            state = self.cell(inp, state)
            att = torch.softmax(torch.einsum("bd,bnd->bn", self.attn(state), q_enc), -1)
            ctx = torch.einsum("bn,bnd->bd", att, q_enc)
            feat = torch.cat([state, ctx], -1)
            col_scores = torch.einsum("bd,bnd->bn", self.col_query(feat), col_enc)
            scores.append(torch.cat([self.action_out(feat), col_scores], -1))
        return torch.stack(scores, 1)  # (B, T, N_ACTIONS + n_columns)


def make_batch(batch_size=8, nq=10, nt=3, nc=6, steps=5):
    question = torch.randint(2, VOCAB, (batch_size, nq))
    tables = torch.randint(0, SCHEMA_VOCAB, (batch_size, nt))
    columns = torch.randint(0, SCHEMA_VOCAB, (batch_size, nc))
    link = (torch.rand(batch_size, nc) < 0.3).float()
    target = torch.randint(2, N_ACTIONS + nc, (batch_size, steps))
    prev = torch.cat([torch.full((batch_size, 1), PAD_ACTION), target[:, :-1].clamp(max=N_ACTIONS - 1)], 1)
    return question, tables, columns, link, prev, target


encoder = SchemaLinkingEncoder()
decoder = GrammarCopyDecoder()
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=3e-4)

for step in range(4):
    question, tables, columns, link, prev, target = make_batch()
    q_enc, col_enc = encoder(question, tables, columns, link)
    scores = decoder(q_enc, col_enc, prev)
    # the parser must never emit UNK: ban it at every decoding step
    for step_scores in scores.unbind(1):
        step_scores[:, UNK_ACTION] = -float("inf")
    sql_loss = F.cross_entropy(scores.reshape(-1, scores.size(-1)), target.reshape(-1))
    optimizer.zero_grad()
    sql_loss.backward()
    nn.utils.clip_grad_norm_(list(encoder.parameters()) + list(decoder.parameters()), 5.0)
    optimizer.step()
    acc = (scores.argmax(-1) == target).float().mean()
    print(f"step {step}: loss {sql_loss.item():.4f}, action accuracy {acc.item():.3f}")
