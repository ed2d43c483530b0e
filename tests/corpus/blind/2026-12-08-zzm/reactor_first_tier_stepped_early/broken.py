"""Double-tier multiple-instance learning over fuel-rod eddy-current scans.

Source: https://github.com/hrzhang1123/DTFD-MIL/issues/8
("wrong gradient calculation code?").  The reporter trained DTFD-MIL (a
double-tier feature-distillation MIL model for whole-slide images) with the
repository's training loop on torch 1.12.  Each slide is split into pseudo-bags;
tier 1 (dimension reduction + gated attention + a sub-classifier, optimizer0)
classifies each pseudo-bag, and the attention-pooled pseudo-bag features go to
tier 2 (an attention classifier, optimizer1).  The loop calls
``loss0.backward(retain_graph=True)`` and then ``optimizer0.step()`` *before*
``loss1.backward()``, so Adam rewrites the tier-1 weights that loss1's graph
saved, and ``loss1.backward()`` fails with "one of the variables needed for
gradient computation has been modified by an inplace operation: [torch.FloatTensor
[128, 1]] ... is at version 6; expected version 5".  The reporter's fix, which the
thread settles on, is to call ``optimizer0.step()`` right before
``optimizer1.step()``, i.e. after both backward passes.

Reduction: the same two tiers and two Adam optimizers, the same pseudo-bag split,
attention-feature distillation ("AFS") and the same order of backward/step calls,
applied to a nuclear fuel-inspection setting: each bag is one fuel rod, its
instances are eddy-current probe patches along the cladding, and the label is
whether the rod has a cladding flaw.  Data are synthetic.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)

HPARAMS = {
    "in_chn": 24,
    "m_dim": 32,
    "num_cls": 2,
    "num_group": 4,
    "patches_per_rod": 48,
    "rods": 10,
    "epochs": 2,
    "lr": 1e-3,
    "weight_decay": 1e-4,
    "grad_clipping": 5.0,
    "droprate": 0.0,
}


class DimReduction(nn.Module):
    def __init__(self, n_channels, m_dim):
        super().__init__()
        self.fc1 = nn.Linear(n_channels, m_dim, bias=False)
        self.relu1 = nn.ReLU()

    def forward(self, x):
        return self.relu1(self.fc1(x))


class AttentionGated(nn.Module):
    def __init__(self, L, D=16, K=1):
        super().__init__()
        self.attention_V = nn.Sequential(nn.Linear(L, D), nn.Tanh())
        self.attention_U = nn.Sequential(nn.Linear(L, D), nn.Sigmoid())
        self.attention_weights = nn.Linear(D, K)

    def forward(self, x):
        a_v = self.attention_V(x)
        a_u = self.attention_U(x)
        a = self.attention_weights(a_v * a_u)  # N x K
        a = torch.transpose(a, 1, 0)  # K x N
        return F.softmax(a, dim=1)


class Classifier1fc(nn.Module):
    def __init__(self, n_channels, n_classes, droprate=0.0):
        super().__init__()
        self.fc = nn.Linear(n_channels, n_classes)
        self.dropout = nn.Dropout(p=droprate)

    def forward(self, x):
        return self.fc(self.dropout(x))


class AttentionWithClassifier(nn.Module):
    def __init__(self, L, num_cls, droprate=0.0):
        super().__init__()
        self.attention = AttentionGated(L)
        self.classifier = Classifier1fc(L, num_cls, droprate)

    def forward(self, x):
        aa = self.attention(x)  # 1 x N
        afeat = torch.mm(aa, x)  # 1 x L
        return self.classifier(afeat)


def make_rods(hp):
    """Synthetic eddy-current patch features; flawed rods have a few hot patches."""
    bags, labels = [], []
    for i in range(hp["rods"]):
        label = i % 2
        feats = torch.randn(hp["patches_per_rod"], hp["in_chn"])
        if label == 1:
            hot = torch.randperm(hp["patches_per_rod"])[:5]
            feats[hot, :4] += 2.5
        bags.append(feats)
        labels.append(torch.tensor([label]))
    return bags, labels


def train_epoch(bags, labels, dim_reduction, attention, classifier, att_cls,
                optimizer0, optimizer1, ce_cri, hp):
    dim_reduction.train(); attention.train(); classifier.train(); att_cls.train()
    total = 0.0
    for feats, slide_label in zip(bags, labels):
        slide_pseudo_feat, slide_sub_preds, slide_sub_labels = [], [], []
        feat_index = torch.randperm(feats.shape[0])
        for tindex in torch.chunk(feat_index, hp["num_group"]):
            slide_sub_labels.append(slide_label)
            sub_feat = torch.index_select(feats, dim=0, index=tindex)
            tmid_feat = dim_reduction(sub_feat)
            t_aa = attention(tmid_feat).squeeze(0)
            tatt_feats = torch.einsum("ns,n->ns", tmid_feat, t_aa)
            tatt_feat_tensor = torch.sum(tatt_feats, dim=0).unsqueeze(0)
            slide_sub_preds.append(classifier(tatt_feat_tensor))
            slide_pseudo_feat.append(tatt_feat_tensor)  # distill == "AFS"

        slide_pseudo_feat = torch.cat(slide_pseudo_feat, dim=0)
        slide_sub_preds = torch.cat(slide_sub_preds, dim=0)
        slide_sub_labels = torch.cat(slide_sub_labels, dim=0)

        # optimization for the first tier
        loss0 = ce_cri(slide_sub_preds, slide_sub_labels).mean()
        optimizer0.zero_grad()
        loss0.backward(retain_graph=True)
        torch.nn.utils.clip_grad_norm_(dim_reduction.parameters(), hp["grad_clipping"])
        torch.nn.utils.clip_grad_norm_(attention.parameters(), hp["grad_clipping"])
        torch.nn.utils.clip_grad_norm_(classifier.parameters(), hp["grad_clipping"])
        optimizer0.step()

        # optimization for the second tier
        g_slide_pred = att_cls(slide_pseudo_feat)
        loss1 = ce_cri(g_slide_pred, slide_label).mean()
        optimizer1.zero_grad()
        loss1.backward()
        torch.nn.utils.clip_grad_norm_(att_cls.parameters(), hp["grad_clipping"])
        optimizer1.step()
        total += loss0.item() + loss1.item()
    return total / len(bags)


def main():
    hp = HPARAMS
    bags, labels = make_rods(hp)
    dim_reduction = DimReduction(hp["in_chn"], hp["m_dim"])
    attention = AttentionGated(hp["m_dim"])
    classifier = Classifier1fc(hp["m_dim"], hp["num_cls"], hp["droprate"])
    att_cls = AttentionWithClassifier(hp["m_dim"], hp["num_cls"], hp["droprate"])

    trainable_parameters = []
    trainable_parameters += list(classifier.parameters())
    trainable_parameters += list(attention.parameters())
    trainable_parameters += list(dim_reduction.parameters())
    optimizer0 = torch.optim.Adam(trainable_parameters, lr=hp["lr"], weight_decay=hp["weight_decay"])
    optimizer1 = torch.optim.Adam(att_cls.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"])
    ce_cri = nn.CrossEntropyLoss(reduction="none")

    for epoch in range(hp["epochs"]):
        loss = train_epoch(bags, labels, dim_reduction, attention, classifier, att_cls,
                           optimizer0, optimizer1, ce_cri, hp)
        print(f"epoch {epoch}: mean loss {loss:.4f}")


if __name__ == "__main__":
    main()
