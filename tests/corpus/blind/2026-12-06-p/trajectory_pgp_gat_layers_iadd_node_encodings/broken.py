"""Multimodal vehicle trajectory prediction on a lane graph (PGP-style encoder).

Reduced from https://github.com/nachiket92/PGP/issues/19 ("RuntimeError when training"):
the author trains PGP, a trajectory forecaster for nuScenes. The encoder embeds the target
agent's history with a GRU, encodes every lane-graph node (GRU over the node's poses), lets
the nodes attend to the surrounding agents, mixes both with a 1x1 layer, and then refines the
node encodings with a stack of graph-attention (GAT) layers over the lane graph's adjacency.
A decoder attends from the target agent over the node encodings and regresses K future
trajectories; the loss is the min-ADE over the K modes plus a mode-classification term.
AdamW, one scene per batch, synthetic scenes (36 lane nodes) instead of nuScenes.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

BATCH, MAX_NODES, POSES, NBRS, HIST, FUT, K = 1, 36, 5, 6, 5, 12, 3
NODE_FEAT, AGENT_FEAT, ENC = 6, 5, 32


class GATLayer(nn.Module):
    """Graph attention over lane nodes, one head, edges from the adjacency matrix."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.query_emb = nn.Linear(in_channels, out_channels)
        self.key_emb = nn.Linear(in_channels, out_channels)
        self.val_emb = nn.Linear(in_channels, out_channels)
        self.att = nn.MultiheadAttention(out_channels, 1)

    def forward(self, node_encodings, adj_mat):
        queries = self.query_emb(node_encodings.permute(1, 0, 2))
        keys = self.key_emb(node_encodings.permute(1, 0, 2))
        vals = self.val_emb(node_encodings.permute(1, 0, 2))
        att_op, _ = self.att(queries, keys, vals, attn_mask=~adj_mat)
        return att_op.permute(1, 0, 2)


class PGPEncoder(nn.Module):
    def __init__(self, num_gat_layers=2):
        super().__init__()
        self.leaky_relu = nn.LeakyReLU()
        self.target_agent_emb = nn.Linear(AGENT_FEAT, 16)
        self.target_agent_enc = nn.GRU(16, ENC, batch_first=True)
        self.node_emb = nn.Linear(NODE_FEAT, 16)
        self.node_encoder = nn.GRU(16, ENC, batch_first=True)
        self.nbr_emb = nn.Linear(AGENT_FEAT, 16)
        self.nbr_enc = nn.GRU(16, ENC, batch_first=True)
        self.query_emb = nn.Linear(ENC, ENC)
        self.key_emb = nn.Linear(ENC, ENC)
        self.val_emb = nn.Linear(ENC, ENC)
        self.a_n_att = nn.MultiheadAttention(ENC, 1)
        self.mix = nn.Linear(2 * ENC, ENC)
        self.gat = nn.ModuleList([GATLayer(ENC, ENC) for _ in range(num_gat_layers)])

    @staticmethod
    def gru_encode(feats, gru):
        batch, n, t, d = feats.shape
        _, h = gru(feats.reshape(batch * n, t, d))
        return h.squeeze(0).reshape(batch, n, -1)

    def forward(self, inputs):
        target_agent_embedding = self.leaky_relu(self.target_agent_emb(inputs["target_agent"]))
        _, target_agent_enc = self.target_agent_enc(target_agent_embedding)
        target_agent_enc = target_agent_enc.squeeze(0)

        lane_node_embedding = self.leaky_relu(self.node_emb(inputs["lane_node_feats"]))
        lane_node_enc = self.gru_encode(lane_node_embedding, self.node_encoder)

        nbr_embedding = self.leaky_relu(self.nbr_emb(inputs["nbr_feats"]))
        nbr_enc = self.gru_encode(nbr_embedding, self.nbr_enc)

        # Agent-node attention
        queries = self.query_emb(lane_node_enc).permute(1, 0, 2)
        keys = self.key_emb(nbr_enc).permute(1, 0, 2)
        vals = self.val_emb(nbr_enc).permute(1, 0, 2)
        att_op, _ = self.a_n_att(queries, keys, vals)
        att_op = att_op.permute(1, 0, 2)

        # Concatenate with original node encodings and 1x1 conv
        lane_node_enc = self.leaky_relu(self.mix(torch.cat((lane_node_enc, att_op), dim=2)))

        # GAT layers
        adj_mat = inputs["adj_mat"]
        for gat_layer in self.gat:
            lane_node_enc += gat_layer(lane_node_enc, adj_mat)

        return target_agent_enc, lane_node_enc


class MultimodalDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(ENC, 1)
        self.traj_head = nn.Linear(2 * ENC, K * FUT * 2)
        self.prob_head = nn.Linear(2 * ENC, K)

    def forward(self, target_agent_enc, lane_node_enc):
        query = target_agent_enc.unsqueeze(0)
        nodes = lane_node_enc.permute(1, 0, 2)
        context, _ = self.attn(query, nodes, nodes)
        h = torch.cat((target_agent_enc, context.squeeze(0)), dim=-1)
        traj = self.traj_head(h).view(-1, K, FUT, 2)
        return traj, self.prob_head(h)


def min_ade_loss(traj, log_probs, gt):
    ade = (traj - gt.unsqueeze(1)).norm(dim=-1).mean(dim=-1)
    min_ade, best = ade.min(dim=1)
    return min_ade.mean() + F.cross_entropy(log_probs, best)


def synthetic_scene():
    adj = torch.rand(BATCH, MAX_NODES, MAX_NODES) < 0.4
    adj |= torch.eye(MAX_NODES, dtype=torch.bool).unsqueeze(0)
    return {
        "target_agent": torch.randn(BATCH, HIST, AGENT_FEAT),
        "lane_node_feats": torch.randn(BATCH, MAX_NODES, POSES, NODE_FEAT),
        "nbr_feats": torch.randn(BATCH, NBRS, HIST, AGENT_FEAT),
        "adj_mat": adj,
    }, torch.randn(BATCH, FUT, 2).cumsum(dim=1)


encoder = PGPEncoder(num_gat_layers=2)
decoder = MultimodalDecoder()
optimizer = torch.optim.AdamW(list(encoder.parameters()) + list(decoder.parameters()), lr=1e-3)

for epoch in range(3):
    for it in range(4):
        inputs, gt = synthetic_scene()
        target_agent_enc, lane_node_enc = encoder(inputs)
        traj, logits = decoder(target_agent_enc, lane_node_enc)
        loss = min_ade_loss(traj, logits, gt)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
