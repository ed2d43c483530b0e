"""Multi-label text classification with the Distribution-Balanced loss (long-tailed label set).

Reduced from https://github.com/wutong16/DistributionBalancedLoss/issues/20: the author trains a
multi-label classifier (the report's tensor is a batch of 64 over 109 labels) with the repository's
`ResampleLoss` configured as the DB loss (rebalanced weights, focal term, negative-tolerant logit
regularization with `init_bias` and `neg_scale`), class frequencies counted on the training set.
The report does not show the encoder; the bag-of-words text classifier here (embedding bag, one
hidden layer, sigmoid scores per label) is the writer's, on synthetic documents.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VOCAB = 200
NUM_LABELS = 12
DOC_LEN = 20
N_DOCS = 64
BATCH_SIZE = 16


def reduce_loss(loss, reduction):
    reduction_enum = F._Reduction.get_enum(reduction)
    if reduction_enum == 0:
        return loss
    elif reduction_enum == 1:
        return loss.mean()
    elif reduction_enum == 2:
        return loss.sum()


def weight_reduce_loss(loss, weight=None, reduction="mean", avg_factor=None):
    if weight is not None:
        loss = loss * weight
    if avg_factor is None:
        loss = reduce_loss(loss, reduction)
    elif reduction == "mean":
        loss = loss.sum() / avg_factor
    return loss


def binary_cross_entropy(pred, label, weight=None, reduction="mean", avg_factor=None):
    if weight is not None:
        weight = weight.float()
    loss = F.binary_cross_entropy_with_logits(pred, label.float(), weight, reduction="none")
    loss = weight_reduce_loss(loss, reduction=reduction, avg_factor=avg_factor)
    return loss


class ResampleLoss(nn.Module):
    def __init__(
        self,
        class_freq,
        neg_class_freq,
        use_sigmoid=True,
        reduction="mean",
        loss_weight=1.0,
        focal=None,
        map_param=None,
        logit_reg=None,
        reweight_func="rebalance",
        weight_norm=None,
    ):
        super(ResampleLoss, self).__init__()
        focal = focal or dict(focal=True, balance_param=2.0, gamma=2)
        map_param = map_param or dict(alpha=0.1, beta=10.0, gamma=0.2)
        logit_reg = logit_reg or dict(neg_scale=2.0, init_bias=0.05)
        self.use_sigmoid = use_sigmoid
        self.loss_weight = loss_weight
        self.reduction = reduction
        self.cls_criterion = binary_cross_entropy
        self.reweight_func = reweight_func
        self.weight_norm = weight_norm

        self.focal = focal["focal"]
        self.gamma = focal["gamma"]
        self.balance_param = focal["balance_param"]

        self.map_alpha = map_param["alpha"]
        self.map_beta = map_param["beta"]
        self.map_gamma = map_param["gamma"]

        self.class_freq = class_freq.float()
        self.neg_class_freq = neg_class_freq.float()
        self.num_classes = self.class_freq.shape[0]
        self.train_num = self.class_freq[0] + self.neg_class_freq[0]

        self.logit_reg = logit_reg
        self.neg_scale = logit_reg.get("neg_scale", 1.0)
        init_bias = logit_reg.get("init_bias", 0.0)
        self.init_bias = -torch.log(self.train_num / self.class_freq - 1) * init_bias / self.neg_scale

        self.freq_inv = torch.ones(self.class_freq.shape) / self.class_freq
        self.propotion_inv = self.train_num / self.class_freq

    def forward(self, cls_score, label, weight=None, avg_factor=None, reduction_override=None):
        reduction = reduction_override if reduction_override else self.reduction

        weight = self.reweight_functions(label)

        cls_score, weight = self.logit_reg_functions(label.float(), cls_score, weight)

        if self.focal:
            logpt = -self.cls_criterion(cls_score.clone(), label, weight=None, reduction="none", avg_factor=avg_factor)
            # pt is sigmoid(logit) for pos or sigmoid(-logit) for neg
            pt = torch.exp(logpt)
            loss = self.cls_criterion(cls_score, label.float(), weight=weight, reduction="none")
            loss = ((1 - pt) ** self.gamma) * loss
            loss = self.balance_param * loss
            loss = reduce_loss(loss, reduction)
        else:
            loss = self.cls_criterion(cls_score, label.float(), weight, reduction=reduction)

        loss = self.loss_weight * loss
        return loss

    def reweight_functions(self, label):
        if self.reweight_func is None:
            return None
        weight = self.rebalance_weight(label.float())
        if self.weight_norm is not None:
            if "by_instance" in self.weight_norm:
                max_by_instance, _ = torch.max(weight, dim=-1, keepdim=True)
                weight = weight / max_by_instance
            elif "by_batch" in self.weight_norm:
                weight = weight / torch.max(weight)
        return weight

    def logit_reg_functions(self, labels, logits, weight=None):
        if not self.logit_reg:
            return logits, weight
        if "init_bias" in self.logit_reg:
            logits += self.init_bias
        if "neg_scale" in self.logit_reg:
            logits = logits * (1 - labels) * self.neg_scale + logits * labels
            weight = weight / self.neg_scale * (1 - labels) + weight * labels
        return logits, weight

    def rebalance_weight(self, gt_labels):
        repeat_rate = torch.sum(gt_labels.float() * self.freq_inv, dim=1, keepdim=True)
        pos_weight = self.freq_inv.clone().detach().unsqueeze(0) / repeat_rate
        # pos and neg are equally treated
        weight = torch.sigmoid(self.map_beta * (pos_weight - self.map_gamma)) + self.map_alpha
        return weight


class BagOfWordsClassifier(nn.Module):
    def __init__(self, vocab_size, embed_dim, hidden_dim, num_labels):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, mode="mean")
        self.hidden = nn.Linear(embed_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, num_labels)

    def forward(self, tokens):
        h = torch.relu(self.hidden(self.embedding(tokens)))
        return self.out(h)


def make_corpus(n_docs, doc_len, vocab, num_labels):
    tokens = torch.randint(0, vocab, (n_docs, doc_len))
    # long-tailed labels: label k is present with probability that decays with k
    probs = 0.6 * torch.exp(-0.35 * torch.arange(num_labels, dtype=torch.float32)) + 0.08
    labels = (torch.rand(n_docs, num_labels) < probs).float()
    labels[labels.sum(dim=1) == 0, 0] = 1.0  # every document has at least one label
    return tokens, labels


def train_epoch(model, criterion, optimizer, tokens, labels):
    model.train()
    total = 0.0
    for start in range(0, len(tokens), BATCH_SIZE):
        batch_tokens = tokens[start : start + BATCH_SIZE]
        batch_labels = labels[start : start + BATCH_SIZE]
        scores = model(batch_tokens)
        loss = criterion(scores, batch_labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


def main():
    tokens, labels = make_corpus(N_DOCS, DOC_LEN, VOCAB, NUM_LABELS)
    class_freq = labels.sum(dim=0)
    neg_class_freq = len(labels) - class_freq
    model = BagOfWordsClassifier(VOCAB, 32, 32, NUM_LABELS)
    criterion = ResampleLoss(class_freq, neg_class_freq)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        print(f"epoch {epoch}: loss {train_epoch(model, criterion, optimizer, tokens, labels):.4f}")


if __name__ == "__main__":
    main()
