"""Code generation: a small decoder-only model writes programs for input/output examples.

Reduced from https://github.com/1KE-JI/HierVerb/issues/4 . There the author trained a prompt-tuned
BERT classifier and added an auxiliary masked-LM loss: after the classification forward pass, the
batch's ``input_ids`` went through ``_mask_tokens(tokenizer, input_ids.cpu())``, which writes [MASK]
and random tokens into the tensor in place. On a GPU ``.cpu()`` returns a copy; run on the CPU it
returns the very tensor the embedding layer had saved for backward, so ``loss.backward()`` failed with
"one of the variables needed for gradient computation has been modified by an inplace operation:
[torch.LongTensor [4, 512]] is at version 2; expected version 0".

The training setting is the writer's: a tiny code model is trained with teacher forcing on reference
programs, an auxiliary denoising loss on corrupted copies of the same sequences (the masking helper is
the report's, with ``.cpu()`` meant as "give me my own copy"), and REINFORCE with a reward from unit
tests on sampled programs.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB = ["<pad>", "<bos>", "<eos>", "<mask>", "IN", "OUT", ";", "PROG", "x", "+", "*", "-"] + [str(d) for d in range(10)]
TOK = {t: i for i, t in enumerate(VOCAB)}
PAD, BOS, EOS, MASK = 0, 1, 2, 3
TESTS_X = [0, 1, 2, 3]


def make_task(a, b):
    """Prompt with unit tests of f(x) = a * x + b, then the reference program."""
    toks = ["<bos>"]
    for x in TESTS_X:
        y = a * x + b
        toks += ["IN", str(x), "OUT", str(y // 10), str(y % 10), ";"]
    toks += ["PROG", "x", "*", str(a), "+", str(b), "<eos>"]
    return [TOK[t] for t in toks], (a, b)


def run_unit_tests(prog_ids, ab):
    """Execute a generated program on the task's unit tests; the fraction that passes is the reward."""
    words = [VOCAB[i] for i in prog_ids]
    if "<eos>" in words:
        words = words[: words.index("<eos>")]
    src = " ".join(words)
    if not src or any(w not in ("x", "+", "*", "-") and not w.isdigit() for w in words):
        return 0.0
    passed = 0
    for x in TESTS_X:
        try:
            passed += int(eval(src, {"__builtins__": {}}, {"x": x}) == ab[0] * x + ab[1])
        except Exception:
            pass
    return passed / len(TESTS_X)


def mask_tokens(input_ids, prob=0.3):
    """Denoising targets: 80% of the chosen tokens become <mask>, half the rest a random token."""
    labels = input_ids.clone()
    chosen = torch.bernoulli(torch.full(labels.shape, prob)).bool() & (labels > MASK)
    labels[~chosen] = -100
    replaced = torch.bernoulli(torch.full(labels.shape, 0.8)).bool() & chosen
    input_ids[replaced] = MASK
    randomised = torch.bernoulli(torch.full(labels.shape, 0.5)).bool() & chosen & ~replaced
    input_ids[randomised] = torch.randint(MASK + 1, len(VOCAB), labels.shape)[randomised]
    return input_ids, labels


class CodeLM(nn.Module):
    def __init__(self, vocab, dim=48, max_len=40):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, 96, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        t = ids.shape[1]
        causal = torch.triu(torch.full((t, t), float("-inf")), 1)
        h = self.tok(ids) + self.pos(torch.arange(t))
        return self.head(self.blocks(h, mask=causal))


def sample_programs(model, prompts, steps=6):
    """Ancestral sampling of program tokens after the prompt; returns tokens and their log-probs."""
    seq, logps = prompts, []
    for _ in range(steps):
        logits = model(seq)[:, -1]
        dist = torch.distributions.Categorical(logits=logits)
        tok = dist.sample()
        logps.append(dist.log_prob(tok))
        seq = torch.cat([seq, tok[:, None]], 1)
    return seq[:, prompts.shape[1]:], torch.stack(logps, 1).sum(1)


model = CodeLM(len(VOCAB))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
baseline = 0.0

for step in range(20):
    tasks = [make_task(int(a), int(b)) for a, b in torch.randint(0, 5, (8, 2))]
    ids = torch.tensor([t[0] for t in tasks])
    prog_start = ids.shape[1] - 6  # first token after PROG

    logits = model(ids[:, :-1])  # teacher forcing on the reference programs
    lm_loss = F.cross_entropy(logits[:, prog_start - 1:].reshape(-1, len(VOCAB)), ids[:, prog_start:].reshape(-1))

    noisy_ids, noisy_labels = mask_tokens(ids.cpu())  # .cpu() hands the collator its own copy
    denoise_logits = model(noisy_ids[:, :-1])
    denoise_loss = F.cross_entropy(denoise_logits.reshape(-1, len(VOCAB)), noisy_labels[:, 1:].reshape(-1), ignore_index=-100)

    programs, logp = sample_programs(model, ids[:, :prog_start])
    rewards = torch.tensor([run_unit_tests(p.tolist(), t[1]) for p, t in zip(programs, tasks)])
    pg_loss = -((rewards - baseline) * logp).mean()
    baseline = 0.9 * baseline + 0.1 * rewards.mean().item()

    loss = 0.7 * lm_loss + 0.3 * denoise_loss + 0.1 * pg_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step}: lm {lm_loss.item():.3f} denoise {denoise_loss.item():.3f} pass@1 {rewards.mean():.2f}")
