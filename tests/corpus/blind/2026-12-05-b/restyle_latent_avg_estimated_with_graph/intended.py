"""ReStyle (iterative pSp encoder) trained against a converted StyleGAN2 generator with no stored latent average.

Source: https://github.com/yuval-alaluf/restyle-encoder/issues/15
"RuntimeError: Trying to backward through the graph a second time ..." (resolved by pull
request https://github.com/yuval-alaluf/restyle-encoder/pull/16, "Estimate `latent_avg` from
generator if it is not available in checkpoint").
The reporter trained ReStyle-pSp from a StyleGAN2 generator converted from another codebase,
whose checkpoint has no ``latent_avg``, so the average latent is estimated from the generator's
mapping network. Reduced: a small mapping MLP and a tiny synthesis network, a 3-layer encoder,
random 16x16 images, an L2 loss; the coach's iterative refinement loop is ReStyle's.
Corrected as the maintainers' snippet for the same estimate does
(``self.net.decoder.mean_latent(int(1e5))[0].detach()``): the estimated average is a constant.
"""

from argparse import Namespace

import torch
import torch.nn as nn
import torch.nn.functional as F


class Generator(nn.Module):
    def __init__(self, style_dim=32, n_latent=4, size=16):
        super().__init__()
        self.style_dim, self.n_latent = style_dim, n_latent
        self.style = nn.Sequential(nn.Linear(style_dim, style_dim), nn.LeakyReLU(0.2), nn.Linear(style_dim, style_dim))
        self.input = nn.Parameter(torch.randn(1, 16, size // 4, size // 4))
        self.convs = nn.ModuleList([nn.Conv2d(16, 16, 3, padding=1) for _ in range(n_latent - 1)])
        self.affines = nn.ModuleList([nn.Linear(style_dim, 16) for _ in range(n_latent - 1)])
        self.to_rgb = nn.Conv2d(16, 3, 1)

    def mean_latent(self, n_latent):
        latent_in = torch.randn(n_latent, self.style_dim)
        latent = self.style(latent_in).mean(0, keepdim=True)
        return latent

    def forward(self, styles, input_is_latent=False, return_latents=False):
        latent = styles[0] if input_is_latent else self.style(styles[0]).unsqueeze(1).repeat(1, self.n_latent, 1)
        x = self.input.expand(latent.size(0), -1, -1, -1)
        for i, (conv, affine) in enumerate(zip(self.convs, self.affines)):
            if i in (1, 2):
                x = F.interpolate(x, scale_factor=2)
            x = F.leaky_relu(conv(x * affine(latent[:, i])[:, :, None, None]), 0.2)
        image = torch.tanh(self.to_rgb(x))
        return (image, latent) if return_latents else (image, None)


class Encoder(nn.Module):
    def __init__(self, n_styles=4, style_dim=32):
        super().__init__()
        self.n_styles, self.style_dim = n_styles, style_dim
        self.body = nn.Sequential(nn.Conv2d(6, 16, 3, 2, 1), nn.PReLU(16), nn.Conv2d(16, 32, 3, 2, 1), nn.PReLU(32))
        self.fc = nn.Linear(32 * 4 * 4, n_styles * style_dim)

    def forward(self, x):
        return self.fc(self.body(x).flatten(1)).view(-1, self.n_styles, self.style_dim)


class pSp(nn.Module):
    def __init__(self, opts):
        super().__init__()
        self.opts = opts
        self.encoder = Encoder()
        self.decoder = Generator()
        self.load_weights()

    def load_weights(self):
        ckpt = {}  # the converted generator's checkpoint has no 'latent_avg'
        self.__load_latent_avg(ckpt)

    def forward(self, x, latent=None, resize=True, input_code=False, randomize_noise=True, return_latents=False):
        codes = self.encoder(x)
        # residual step: add the encoder's output to the previous step's latent (or to the average latent)
        if self.opts.start_from_latent_avg:
            codes = codes + (self.latent_avg.repeat(codes.shape[0], 1, 1) if latent is None else latent)
        images, result_latent = self.decoder([codes], input_is_latent=True, return_latents=return_latents)
        if return_latents:
            return images, result_latent
        return images

    def __load_latent_avg(self, ckpt, repeat=None):
        if "latent_avg" in ckpt:
            self.latent_avg = ckpt["latent_avg"].to(self.opts.device)
        else:
            # estimate the average latent from the generator's mapping network
            self.latent_avg = self.decoder.mean_latent(int(1e4))[0].detach()


class Coach:
    def __init__(self, opts):
        self.opts = opts
        self.net = pSp(self.opts)
        # the image of the average latent, the first step's second input
        avg_code = self.net.latent_avg.unsqueeze(0).repeat(1, self.net.encoder.n_styles, 1)
        self.avg_image = self.net.decoder([avg_code], input_is_latent=True)[0][0].detach()
        params = list(self.net.encoder.parameters())
        self.optimizer = torch.optim.Adam(params, lr=self.opts.learning_rate)

    def calc_loss(self, y, y_hat):
        return F.mse_loss(y_hat, y)

    def perform_train_iteration_on_batch(self, x, y):
        y_hat, latent = None, None
        for iter in range(self.opts.n_iters_per_batch):
            if iter == 0:
                avg_image_for_batch = self.avg_image.unsqueeze(0).repeat(x.shape[0], 1, 1, 1)
                x_input = torch.cat([x, avg_image_for_batch], dim=1)
                y_hat, latent = self.net.forward(x_input, latent=None, return_latents=True)
            else:
                y_hat_clone = y_hat.clone().detach().requires_grad_(True)
                latent_clone = latent.clone().detach().requires_grad_(True)
                x_input = torch.cat([x, y_hat_clone], dim=1)
                y_hat, latent = self.net.forward(x_input, latent=latent_clone, return_latents=True)
            loss = self.calc_loss(y, y_hat)
            loss.backward()
        return y_hat, loss

    def train(self, images):
        self.net.train()
        for step in range(self.opts.max_steps):
            self.optimizer.zero_grad()
            x = y = images[torch.randint(0, images.size(0), (self.opts.batch_size,))]
            _, loss = self.perform_train_iteration_on_batch(x, y)
            self.optimizer.step()
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    opts = Namespace(
        device="cpu", start_from_latent_avg=True, learning_rate=1e-3, n_iters_per_batch=3, batch_size=4, max_steps=5
    )
    coach = Coach(opts)
    coach.train(torch.rand(16, 3, 16, 16) * 2 - 1)
