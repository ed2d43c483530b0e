"""MolGAN (WGAN-GP + reinforcement-learning reward network) for small molecular graphs.

Reduced from https://github.com/kfzyqin/Implementation-MolGAN-PyTorch/issues/1 : the
author runs the PyTorch MolGAN implementation's Solver: a generator maps noise to
edge/node logits of a molecular graph, a graph-convolutional discriminator D is trained
with a gradient penalty every step but every n_critic-th, and on the n_critic-th steps
the generator is trained by the WGAN loss mixed with an RL loss from a value network V,
while V regresses the (non-differentiable) chemical reward of real and generated
molecules. Three RMSprop optimizers, one per network; synthetic molecules and a toy
reward stand in for QM9 and RDKit.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_ATOMS, ATOM_TYPES, BOND_TYPES, Z_DIM, BATCH = 6, 4, 3, 8, 8


class Generator(nn.Module):
    def __init__(self, conv_dims, z_dim, vertexes, edges, nodes):
        super().__init__()
        self.vertexes, self.edges, self.nodes = vertexes, edges, nodes
        layers = []
        for c0, c1 in zip([z_dim] + conv_dims[:-1], conv_dims):
            layers += [nn.Linear(c0, c1), nn.Tanh()]
        self.layers = nn.Sequential(*layers)
        self.edges_layer = nn.Linear(conv_dims[-1], edges * vertexes * vertexes)
        self.nodes_layer = nn.Linear(conv_dims[-1], vertexes * nodes)

    def forward(self, x):
        output = self.layers(x)
        edges_logits = self.edges_layer(output).view(-1, self.edges, self.vertexes, self.vertexes)
        edges_logits = (edges_logits + edges_logits.permute(0, 1, 3, 2)) / 2
        edges_logits = edges_logits.permute(0, 2, 3, 1)
        nodes_logits = self.nodes_layer(output).view(-1, self.vertexes, self.nodes)
        return edges_logits, nodes_logits


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_feature, b_dim):
        super().__init__()
        self.linear = nn.ModuleList([nn.Linear(in_features, out_feature) for _ in range(b_dim)])
        self.linear_self = nn.Linear(in_features, out_feature)

    def forward(self, adj, node):
        hidden = torch.stack([lin(node) for lin in self.linear], 1)  # B, b_dim, N, F
        hidden = torch.matmul(adj.permute(0, 3, 1, 2), hidden).sum(1)
        return torch.tanh(hidden + self.linear_self(node))


class Discriminator(nn.Module):
    def __init__(self, conv_dim, m_dim, b_dim):
        super().__init__()
        self.gcn = GraphConvolution(m_dim, conv_dim, b_dim)
        self.agg_i = nn.Linear(conv_dim + m_dim, conv_dim)
        self.agg_j = nn.Linear(conv_dim + m_dim, conv_dim)
        self.linear = nn.Sequential(nn.Linear(conv_dim, conv_dim), nn.Tanh())
        self.output_layer = nn.Linear(conv_dim, 1)

    def forward(self, adj, hidden, node, activation=None):
        adj = adj[:, :, :, 1:]
        h = self.gcn(adj, node)
        annotations = torch.cat((h, node), -1)
        i = torch.sigmoid(self.agg_i(annotations))
        j = torch.tanh(self.agg_j(annotations))
        h = torch.tanh(torch.sum(i * j, 1))
        h = self.linear(h)
        output = self.output_layer(h)
        output = activation(output) if activation is not None else output
        return output, h


class Solver:
    def __init__(self):
        self.z_dim, self.m_dim, self.b_dim = Z_DIM, ATOM_TYPES, BOND_TYPES
        self.la, self.la_gp, self.n_critic = 0.5, 10.0, 2
        self.g_lr = self.d_lr = 1e-3
        self.post_method = "softmax"
        self.build_model()

    def build_model(self):
        self.G = Generator([16, 32], self.z_dim, N_ATOMS, self.b_dim, self.m_dim)
        self.D = Discriminator(16, self.m_dim, self.b_dim - 1)
        self.V = Discriminator(16, self.m_dim, self.b_dim - 1)
        self.g_optimizer = torch.optim.RMSprop(self.G.parameters(), self.g_lr)
        self.d_optimizer = torch.optim.RMSprop(self.D.parameters(), self.d_lr)
        self.v_optimizer = torch.optim.RMSprop(self.V.parameters(), self.g_lr)

    def reset_grad(self):
        self.g_optimizer.zero_grad()
        self.d_optimizer.zero_grad()
        self.v_optimizer.zero_grad()

    def gradient_penalty(self, y, x):
        weight = torch.ones(y.size())
        dydx = torch.autograd.grad(outputs=y, inputs=x, grad_outputs=weight, retain_graph=True, create_graph=True)[0]
        dydx = dydx.view(dydx.size(0), -1)
        return torch.mean((torch.sqrt(torch.sum(dydx**2, dim=1)) - 1) ** 2)

    def label2onehot(self, labels, dim):
        out = torch.zeros(list(labels.size()) + [dim])
        out.scatter_(len(out.size()) - 1, labels.unsqueeze(-1), 1.0)
        return out

    def postprocess(self, inputs, temperature=1.0):
        return [F.softmax(logits / temperature, -1) for logits in inputs]

    def reward(self, nodes_onehot):
        """Toy stand-in for RDKit's QED score: the share of carbon-like atoms (type 1)."""
        with torch.no_grad():
            atoms = nodes_onehot.argmax(-1)
            return (atoms == 1).float().mean(1, keepdim=True)

    def next_train_batch(self):
        x = torch.randint(1, self.m_dim, (BATCH, N_ATOMS))
        a = torch.triu(torch.randint(0, self.b_dim, (BATCH, N_ATOMS, N_ATOMS)), 1)
        return a + a.transpose(1, 2), x

    def train(self, num_steps):
        for cur_step in range(num_steps):
            a, x = self.next_train_batch()
            z = torch.randn(BATCH, self.z_dim)
            a_tensor = self.label2onehot(a, self.b_dim)
            x_tensor = self.label2onehot(x, self.m_dim)

            # ---- 2. Train the discriminator ----
            logits_real, features_real = self.D(a_tensor, None, x_tensor)
            edges_logits, nodes_logits = self.G(z)
            edges_hat, nodes_hat = self.postprocess((edges_logits, nodes_logits))
            logits_fake, features_fake = self.D(edges_hat, None, nodes_hat)

            eps = torch.rand(logits_real.size(0), 1, 1, 1)
            x_int0 = (eps * a_tensor + (1.0 - eps) * edges_hat).requires_grad_(True)
            x_int1 = (eps.squeeze(-1) * x_tensor + (1.0 - eps.squeeze(-1)) * nodes_hat).requires_grad_(True)
            grad0, grad1 = self.D(x_int0, None, x_int1)
            grad_penalty = self.gradient_penalty(grad0, x_int0) + self.gradient_penalty(grad1, x_int1)

            loss_D = -torch.mean(logits_real) + torch.mean(logits_fake) + self.la_gp * grad_penalty
            if cur_step % self.n_critic != 0:
                self.reset_grad()
                loss_D.backward()
                self.d_optimizer.step()

            # ---- 3. Train the generator ----
            edges_logits, nodes_logits = self.G(z)
            edges_hat, nodes_hat = self.postprocess((edges_logits, nodes_logits))
            logits_fake, features_fake = self.D(edges_hat, None, nodes_hat)

            value_logit_real, _ = self.V(a_tensor, None, x_tensor, torch.sigmoid)
            value_logit_fake, _ = self.V(edges_hat, None, nodes_hat, torch.sigmoid)

            reward_r = self.reward(x_tensor)
            reward_f = self.reward(nodes_hat)

            loss_G = torch.mean(-logits_fake)
            loss_V = torch.mean(torch.abs(value_logit_real - reward_r) + torch.abs(value_logit_fake - reward_f))
            loss_RL = torch.mean(-value_logit_fake)

            alpha = torch.abs(loss_G.detach() / loss_RL.detach()).detach()
            train_step_G = self.la * loss_G + (1 - self.la) * alpha * loss_RL
            train_step_V = loss_V

            self.reset_grad()
            if cur_step % self.n_critic == 0:
                train_step_G.backward(retain_graph=True)
                self.g_optimizer.step()
            if cur_step % self.n_critic == 0:
                train_step_V.backward()
                self.v_optimizer.step()
            print(f"step {cur_step}: l_D {loss_D.item():.3f} l_G {loss_G.item():.3f} l_V {loss_V.item():.3f}")


if __name__ == "__main__":
    solver = Solver()
    solver.train(num_steps=12)
