"""Speech separation with SVoice (SWave): an SI-SNR loss with PIT after every separator layer.

Source: https://github.com/facebookresearch/svoice/issues/53
"Run train.py script with torch 1.9.0".
Training stops in ``cal_si_snr_with_pit`` at ``estimate_source *= mask`` with "Output 0 of
UnbindBackward is a view and is being modified inplace. This view is the output of a function
that returns multiple views". The model returns the estimates of all layers stacked in one
tensor, and the solver iterates over it (``for c_idx, est_src in enumerate(estimate_source)``),
which unbinds it into views.
Reduced: the dual-path chunking of the separator is left out (the MulCat blocks run over the
encoder frames directly); a toy size; random two-speaker mixtures with random lengths.
Corrected as the reporter fixed it in the issue: ``estimate_source = estimate_source.clone()``
before ``estimate_source *= mask`` in ``cal_si_snr_with_pit``.
"""

from itertools import permutations

import torch
import torch.nn as nn
import torch.nn.functional as F

EPS = 1e-8


def overlap_and_add(signal, frame_step):
    """[..., frames, frame_length] -> [..., (frames - 1) * frame_step + frame_length]."""
    *outer, frames, frame_length = signal.size()
    output_size = (frames - 1) * frame_step + frame_length
    folded = F.fold(
        signal.reshape(-1, frames, frame_length).transpose(1, 2),
        output_size=(1, output_size),
        kernel_size=(1, frame_length),
        stride=(1, frame_step),
    )
    return folded.view(*outer, output_size)


# The loss, adapted in svoice from https://github.com/kaituoxu/Conv-TasNet
def cal_loss(source, estimate_source, source_lengths):
    max_snr, perms, max_snr_idx, snr_set = cal_si_snr_with_pit(source, estimate_source, source_lengths)
    loss = 0 - torch.mean(max_snr)
    reorder_estimate_source = reorder_source(estimate_source, perms, max_snr_idx)
    return loss, max_snr, estimate_source, reorder_estimate_source


def cal_si_snr_with_pit(source, estimate_source, source_lengths):
    assert source.size() == estimate_source.size()
    B, C, T = source.size()
    # mask padding position along T
    mask = get_mask(source, source_lengths)
    estimate_source = estimate_source.clone()
    estimate_source *= mask

    # Step 1. Zero-mean norm
    num_samples = source_lengths.view(-1, 1, 1).float()  # [B, 1, 1]
    mean_target = torch.sum(source, dim=2, keepdim=True) / num_samples
    mean_estimate = torch.sum(estimate_source, dim=2, keepdim=True) / num_samples
    zero_mean_target = source - mean_target
    zero_mean_estimate = estimate_source - mean_estimate
    # mask padding position along T
    zero_mean_target *= mask
    zero_mean_estimate *= mask

    # Step 2. SI-SNR with PIT
    s_target = torch.unsqueeze(zero_mean_target, dim=1)  # [B, 1, C, T]
    s_estimate = torch.unsqueeze(zero_mean_estimate, dim=2)  # [B, C, 1, T]
    pair_wise_dot = torch.sum(s_estimate * s_target, dim=3, keepdim=True)  # [B, C, C, 1]
    s_target_energy = torch.sum(s_target**2, dim=3, keepdim=True) + EPS  # [B, 1, C, 1]
    pair_wise_proj = pair_wise_dot * s_target / s_target_energy  # [B, C, C, T]
    e_noise = s_estimate - pair_wise_proj  # [B, C, C, T]
    pair_wise_si_snr = torch.sum(pair_wise_proj**2, dim=3) / (torch.sum(e_noise**2, dim=3) + EPS)
    pair_wise_si_snr = 10 * torch.log10(pair_wise_si_snr + EPS)  # [B, C, C]
    pair_wise_si_snr = torch.transpose(pair_wise_si_snr, 1, 2)

    # Get max_snr of each utterance
    perms = source.new_tensor(list(permutations(range(C))), dtype=torch.long)
    index = torch.unsqueeze(perms, 2)
    perms_one_hot = source.new_zeros((*perms.size(), C)).scatter_(2, index, 1)
    snr_set = torch.einsum("bij,pij->bp", [pair_wise_si_snr, perms_one_hot])
    max_snr_idx = torch.argmax(snr_set, dim=1)  # [B]
    max_snr, _ = torch.max(snr_set, dim=1, keepdim=True)
    max_snr /= C
    return max_snr, perms, max_snr_idx, snr_set / C


def reorder_source(source, perms, max_snr_idx):
    B, C, *_ = source.size()
    max_snr_perm = torch.index_select(perms, dim=0, index=max_snr_idx)
    reorder_source = torch.zeros_like(source)
    for b in range(B):
        for c in range(C):
            reorder_source[b, c] = source[b, max_snr_perm[b][c]]
    return reorder_source


def get_mask(source, source_lengths):
    B, _, T = source.size()
    mask = source.new_ones((B, 1, T))
    for i in range(B):
        mask[i, :, source_lengths[i] :] = 0
    return mask


class MulCatBlock(nn.Module):
    def __init__(self, input_size, hidden_size, bidirectional=True):
        super(MulCatBlock, self).__init__()
        self.num_direction = int(bidirectional) + 1
        self.rnn = nn.LSTM(input_size, hidden_size, 1, batch_first=True, bidirectional=bidirectional)
        self.rnn_proj = nn.Linear(hidden_size * self.num_direction, input_size)
        self.gate_rnn = nn.LSTM(input_size, hidden_size, 1, batch_first=True, bidirectional=bidirectional)
        self.gate_rnn_proj = nn.Linear(hidden_size * self.num_direction, input_size)
        self.block_projection = nn.Linear(input_size * 2, input_size)

    def forward(self, input):
        output = input
        rnn_output, _ = self.rnn(output)
        rnn_output = self.rnn_proj(rnn_output)
        gate_rnn_output, _ = self.gate_rnn(output)
        gate_rnn_output = self.gate_rnn_proj(gate_rnn_output)
        gated_output = torch.mul(rnn_output, gate_rnn_output)
        gated_output = torch.cat([gated_output, output], 2)
        return self.block_projection(gated_output)


class Separator(nn.Module):
    def __init__(self, feature_dim, hidden_dim, num_spk=2, layer=2):
        super(Separator, self).__init__()
        self.num_spk = num_spk
        self.blocks = nn.ModuleList([MulCatBlock(feature_dim, hidden_dim) for _ in range(layer)])
        self.output = nn.Sequential(nn.PReLU(), nn.Conv1d(feature_dim, feature_dim * num_spk, 1))

    def forward(self, input):
        output = input.transpose(1, 2)  # B, T, N
        output_all = []
        for block in self.blocks:
            output = output + block(output)
            output_all.append(self.output(output.transpose(1, 2)))  # B, C * N, T
        return output_all


class Encoder(nn.Module):
    def __init__(self, L, N):
        super(Encoder, self).__init__()
        self.L, self.N = L, N
        # setting 50% overlap
        self.conv = nn.Conv1d(1, N, kernel_size=L, stride=L // 2, bias=False)

    def forward(self, mixture):
        mixture = torch.unsqueeze(mixture, 1)
        mixture_w = F.relu(self.conv(mixture))
        return mixture_w


class Decoder(nn.Module):
    def __init__(self, L):
        super(Decoder, self).__init__()
        self.L = L

    def forward(self, est_source):
        est_source = torch.transpose(est_source, 2, 3)
        est_source = nn.AvgPool2d((1, self.L))(est_source)
        est_source = overlap_and_add(est_source, self.L // 2)
        return est_source


class SWave(nn.Module):
    def __init__(self, N, L, H, R, C):
        super(SWave, self).__init__()
        self.N, self.L, self.H, self.R, self.C = N, L, H, R, C
        self.encoder = Encoder(L, N)
        self.decoder = Decoder(L)
        self.separator = Separator(N, H, C, R)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_normal_(p)

    def forward(self, mixture):
        mixture_w = self.encoder(mixture)
        output_all = self.separator(mixture_w)

        # fix time dimension, might change due to convolution operations
        T_mix = mixture.size(-1)
        # generate wav after each RNN block and optimize the loss
        outputs = []
        for ii in range(len(output_all)):
            output_ii = output_all[ii].view(mixture.shape[0], self.C, self.N, mixture_w.shape[2])
            output_ii = self.decoder(output_ii)
            T_est = output_ii.size(-1)
            output_ii = F.pad(output_ii, (0, T_mix - T_est))
            outputs.append(output_ii)
        return torch.stack(outputs)


class Solver(object):
    def __init__(self, data, model, optimizer, epochs=2, max_norm=5):
        self.tr_loader = data["tr_loader"]
        self.model = model
        self.optimizer = optimizer
        self.epochs = epochs
        self.max_norm = max_norm

    def train(self):
        for epoch in range(self.epochs):
            self.model.train()
            train_loss = self._run_one_epoch(epoch)
            print(f"Train Summary | End of Epoch {epoch + 1} | Train Loss {train_loss:.5f}")

    def _run_one_epoch(self, epoch):
        total_loss = 0
        for i, data in enumerate(self.tr_loader):
            mixture, lengths, sources = data
            estimate_source = self.model(mixture)

            loss = 0
            cnt = len(estimate_source)
            # apply a loss function after each layer
            for c_idx, est_src in enumerate(estimate_source):
                coeff = (c_idx + 1) * (1 / cnt)
                # SI-SNR loss
                sisnr_loss, snr, est_src, reorder_est_src = cal_loss(sources, est_src, lengths)
                loss += coeff * sisnr_loss
            loss /= len(estimate_source)

            self.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_norm)
            self.optimizer.step()

            total_loss += loss.item()
        return total_loss / (i + 1)


def make_batch(batch_size=4, C=2, T=400):
    lengths = torch.randint(T // 2, T + 1, (batch_size,))
    lengths[0] = T
    sources = torch.randn(batch_size, C, T)
    for b in range(batch_size):
        sources[b, :, lengths[b] :] = 0
    mixture = sources.sum(1)
    return mixture, lengths, sources


if __name__ == "__main__":
    torch.manual_seed(0)
    data = {"tr_loader": [make_batch() for _ in range(3)]}
    model = SWave(N=32, L=8, H=16, R=2, C=2)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
    solver = Solver(data, model, optimizer)
    solver.train()
