"""Scene-graph generation on synthetic scenes: an object head classifies each proposal and
refines its box, the refined boxes are clipped to the image, and a relation head classifies the
predicate of every ordered object pair after two rounds of message passing between object nodes
and relation edges (the pair geometry comes from the clipped boxes). The detector head and the
relation head have their own optimizers.

Reduces https://github.com/pytorch/pytorch/issues/47899, "Tensor iteration changes behavior in
1.7 with no hint": the reporter looped over a batch tensor that requires grad (``for bb in b:``)
and clamped coordinate columns of each element in place (``bb[:, 0].clamp_(min=0, max=0.3)``).
Since PyTorch 1.7 iterating a tensor unbinds it, and in-place operations on those views raise
"... is a view and is being modified inplace. This view is the output of a function that returns
multiple views". The answer in the thread: index the tensor (``bb = b[i]``) instead of iterating
over it. The training setting (box clipping in a scene-graph model) is the writer's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N_OBJ, N_CLS, N_PRED, FEAT = 4, 5, 4, 16
SIZES = [(32, 24), (24, 32), (32, 32)]
PAIRS = torch.tensor([(s, o) for s in range(N_OBJ) for o in range(N_OBJ) if s != o])
PROTO = torch.randn(N_CLS, FEAT)


def predicates(boxes):
    """0 none, 1 left of, 2 above, 3 overlaps, for every ordered pair of one image."""
    s, o = boxes[PAIRS[:, 0]], boxes[PAIRS[:, 1]]
    ix = torch.minimum(s[:, 2], o[:, 2]) - torch.maximum(s[:, 0], o[:, 0])
    iy = torch.minimum(s[:, 3], o[:, 3]) - torch.maximum(s[:, 1], o[:, 1])
    cs, co = (s[:, :2] + s[:, 2:]) / 2, (o[:, :2] + o[:, 2:]) / 2
    labels = torch.zeros(len(PAIRS), dtype=torch.long)
    labels[cs[:, 1] < co[:, 1] - 6] = 2
    labels[cs[:, 0] < co[:, 0] - 6] = 1
    labels[(ix > 0) & (iy > 0)] = 3
    return labels


def make_batch(n_img):
    sizes = [SIZES[i] for i in torch.randint(len(SIZES), (n_img,)).tolist()]
    gt, props, cls, feats, preds = [], [], [], [], []
    for w, h in sizes:
        xy = torch.rand(N_OBJ, 2) * torch.tensor([w - 8.0, h - 8.0])
        wh = 4 + torch.rand(N_OBJ, 2) * 8
        box = torch.cat([xy, (xy + wh).minimum(torch.tensor([float(w), float(h)]))], dim=1)
        c = torch.randint(N_CLS, (N_OBJ,))
        prop = box + 2.0 * torch.randn_like(box)
        feat = PROTO[c] + 0.8 * torch.randn(N_OBJ, FEAT)
        feat[:, :4] += (box - prop) / 2  # the ROI features see where the object really is
        gt.append(box)
        props.append(prop)
        cls.append(c)
        feats.append(feat)
        preds.append(predicates(box))
    return sizes, torch.stack(gt), torch.stack(props), torch.stack(cls), torch.stack(feats), torch.stack(preds)


def clip_to_image(boxes, sizes):
    for i, (w, h) in enumerate(sizes):
        b = boxes[i]  # index, do not iterate: iterating unbinds, and unbind's views cannot be written in place
        b[:, 0::2].clamp_(0, w)
        b[:, 1::2].clamp_(0, h)
    return boxes


class ObjectHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(FEAT + 4, 64), nn.ReLU())
        self.cls = nn.Linear(64, N_CLS)
        self.delta = nn.Linear(64, 4)

    def forward(self, feats, props, scale):
        h = self.mlp(torch.cat([feats, props / scale], dim=-1))
        return self.cls(h), props + 4.0 * self.delta(h)


class RelationHead(nn.Module):
    def __init__(self, dim=32, rounds=2):
        super().__init__()
        self.rounds = rounds
        self.node_in = nn.Linear(FEAT + 4 + N_CLS, dim)
        self.edge_in = nn.Linear(2 * dim + 6, dim)
        self.node_up = nn.GRUCell(dim, dim)
        self.edge_up = nn.Sequential(nn.Linear(3 * dim, dim), nn.ReLU())
        self.pred = nn.Linear(dim, N_PRED)

    @staticmethod
    def geometry(nb):
        s, o = nb[:, PAIRS[:, 0]], nb[:, PAIRS[:, 1]]
        ws, hs = (s[..., 2] - s[..., 0]).clamp_min(1e-3), (s[..., 3] - s[..., 1]).clamp_min(1e-3)
        wo, ho = (o[..., 2] - o[..., 0]).clamp_min(1e-3), (o[..., 3] - o[..., 1]).clamp_min(1e-3)
        dx = (o[..., 0] + o[..., 2] - s[..., 0] - s[..., 2]) / 2
        dy = (o[..., 1] + o[..., 3] - s[..., 1] - s[..., 3]) / 2
        ux = torch.maximum(s[..., 2], o[..., 2]) - torch.minimum(s[..., 0], o[..., 0])
        uy = torch.maximum(s[..., 3], o[..., 3]) - torch.minimum(s[..., 1], o[..., 1])
        return torch.stack([dx, dy, (wo / ws).log(), (ho / hs).log(), ux, uy], dim=-1)

    def forward(self, feats, obj_logits, boxes, scale):
        nb = boxes / scale
        n = torch.relu(self.node_in(torch.cat([feats, nb, obj_logits.softmax(-1)], dim=-1)))
        e = torch.relu(self.edge_in(torch.cat([n[:, PAIRS[:, 0]], n[:, PAIRS[:, 1]], self.geometry(nb)], dim=-1)))
        for _ in range(self.rounds):
            msg = torch.zeros_like(n).index_add(1, PAIRS[:, 0], e).index_add(1, PAIRS[:, 1], e) / (2 * (N_OBJ - 1))
            n = self.node_up(msg.reshape(-1, msg.shape[-1]), n.reshape(-1, n.shape[-1])).view_as(n)
            e = e + self.edge_up(torch.cat([n[:, PAIRS[:, 0]], n[:, PAIRS[:, 1]], e], dim=-1))
        return self.pred(e)


obj_head = ObjectHead()
rel_head = RelationHead()
det_opt = torch.optim.SGD(obj_head.parameters(), lr=0.02, momentum=0.9)
rel_opt = torch.optim.Adam(rel_head.parameters(), lr=2e-3)

for it in range(80):
    sizes, gt, props, cls, feats, preds = make_batch(8)
    scale = torch.tensor([[w, h, w, h] for w, h in sizes], dtype=torch.float32).unsqueeze(1)
    obj_logits, boxes = obj_head(feats, props, scale)
    boxes = clip_to_image(boxes, sizes)
    rel_logits = rel_head(feats, obj_logits, boxes, scale)

    obj_loss = F.cross_entropy(obj_logits.reshape(-1, N_CLS), cls.reshape(-1))
    box_loss = F.smooth_l1_loss(boxes / scale, gt / scale, beta=0.05)
    rel_loss = F.cross_entropy(rel_logits.reshape(-1, N_PRED), preds.reshape(-1))
    det_opt.zero_grad()
    rel_opt.zero_grad()
    (obj_loss + box_loss + rel_loss).backward()
    det_opt.step()
    rel_opt.step()
    if it % 20 == 0:
        print(f"it {it}: obj {obj_loss.item():.3f} box {box_loss.item():.4f} rel {rel_loss.item():.3f}")
