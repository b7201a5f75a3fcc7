"""Small hand-written models for what the torchvision and transformers architectures miss.

Each is a plain PyTorch module with a fixed structure; the zoo's catalog gives them their
sizes and inputs.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class UNetSmall(nn.Module):
    """A two-level U-Net: Conv + BatchNorm + ReLU blocks, max-pool down, transposed-conv up,
    skip connections by concatenation, a bilinear resize of the logits and a sigmoid mask."""

    def __init__(self, ch=8, classes=2):
        super().__init__()

        def block(i, o):
            return nn.Sequential(
                nn.Conv2d(i, o, 3, padding=1, bias=False),
                nn.BatchNorm2d(o),
                nn.ReLU(inplace=True),
                nn.Conv2d(o, o, 3, padding=1, bias=False),
                nn.BatchNorm2d(o),
                nn.ReLU(inplace=True),
            )

        self.enc1 = block(3, ch)
        self.enc2 = block(ch, ch * 2)
        self.mid = block(ch * 2, ch * 4)
        self.up2 = nn.ConvTranspose2d(ch * 4, ch * 2, 2, stride=2)
        self.dec2 = block(ch * 4, ch * 2)
        self.up1 = nn.ConvTranspose2d(ch * 2, ch, 2, stride=2)
        self.dec1 = block(ch * 2, ch)
        self.head = nn.Conv2d(ch, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        logits = self.head(d1)
        # Predict at half resolution and resize back, as segmentation heads do.
        small = F.avg_pool2d(logits, 2)
        return torch.sigmoid(F.interpolate(small, size=x.shape[-2:], mode="bilinear", align_corners=False))


class GruAttention(nn.Module):
    """A bidirectional GRU over a sequence, additive attention pooling over time, a classifier."""

    def __init__(self, features=32, hidden=32, classes=5):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True, bidirectional=True)
        self.score = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.out = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        h, _ = self.gru(x)  # [b, t, 2h]
        w = torch.softmax(self.score(h), dim=1)  # [b, t, 1]
        return self.out((w * h).sum(dim=1))


class TcnSuperRes(nn.Module):
    """A dilated causal 1-D convolution stack (TCN, weight-normalized) over audio-like frames,
    then an ESPCN-style image head: sub-pixel convolution (PixelShuffle) to 2x resolution."""

    def __init__(self, channels=16, levels=3, upscale=2):
        super().__init__()
        self.levels = nn.ModuleList()
        for i in range(levels):
            d = 2**i
            conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(channels, channels, 3, dilation=d))
            self.levels.append(conv)
        self.img_in = nn.Conv2d(1, 16, 5, padding=2)
        self.img_mid = nn.Conv2d(16, 8, 3, padding=1)
        self.img_out = nn.Conv2d(8, upscale * upscale, 3, padding=1)
        self.shuffle = nn.PixelShuffle(upscale)

    def forward(self, seq, img):
        y = seq
        for i, conv in enumerate(self.levels):
            pad = 2 * (2**i)
            y = y + F.relu(conv(F.pad(y, (pad, 0))))
        z = torch.tanh(self.img_in(img))
        z = torch.tanh(self.img_mid(z))
        return y, self.shuffle(self.img_out(z))


class CausalSelfAttention(nn.Module):
    """Decoder blocks written with torch's scaled_dot_product_attention (is_causal), pre-norm,
    a SiLU MLP and tied input/output embeddings: the attention call exporters rewrite."""

    def __init__(self, vocab=256, dim=32, heads=4, layers=2, seq=16):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(seq, dim) * 0.02)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(
                nn.ModuleDict(
                    dict(
                        n1=nn.LayerNorm(dim),
                        qkv=nn.Linear(dim, 3 * dim),
                        proj=nn.Linear(dim, dim),
                        n2=nn.LayerNorm(dim),
                        up=nn.Linear(dim, 4 * dim),
                        down=nn.Linear(4 * dim, dim),
                    )
                )
            )
        self.norm = nn.LayerNorm(dim)

    def forward(self, ids):
        b, t = ids.shape
        x = self.embed(ids) + self.pos[:t]
        for blk in self.blocks:
            q, k, v = blk["qkv"](blk["n1"](x)).chunk(3, dim=-1)
            q, k, v = (z.reshape(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + blk["proj"](a.transpose(1, 2).reshape(b, t, -1))
            x = x + blk["down"](F.silu(blk["up"](blk["n2"](x))))
        return self.norm(x) @ self.embed.weight.t()


class MlpMixer(nn.Module):
    """MLP-Mixer (Tolstikhin et al., 2021): patch embedding by a strided convolution, token-mixing
    MLPs over the transposed patch axis, channel-mixing MLPs, LayerNorm, mean pooling."""

    def __init__(self, image=32, patch=4, dim=32, layers=2, classes=10):
        super().__init__()
        tokens = (image // patch) ** 2
        self.stem = nn.Conv2d(3, dim, patch, stride=patch)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(
                nn.ModuleDict(
                    dict(
                        n1=nn.LayerNorm(dim),
                        tok=nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens)),
                        n2=nn.LayerNorm(dim),
                        ch=nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim)),
                    )
                )
            )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)  # [b, tokens, dim]
        for layer in self.layers:
            x = x + layer["tok"](layer["n1"](x).transpose(1, 2)).transpose(1, 2)
            x = x + layer["ch"](layer["n2"](x))
        return self.head(self.norm(x).mean(dim=1))


class SpatialTransformer(nn.Module):
    """A spatial transformer network (Jaderberg et al., 2015): a localization net predicts an
    affine transform, affine_grid + grid_sample warp the input, a small CNN classifies it."""

    def __init__(self, classes=10):
        super().__init__()
        self.loc = nn.Sequential(
            nn.Conv2d(1, 8, 5), nn.MaxPool2d(2), nn.ReLU(), nn.Conv2d(8, 10, 3), nn.MaxPool2d(2), nn.ReLU()
        )
        self.fc_loc = nn.Sequential(nn.Linear(10 * 5 * 5, 32), nn.ReLU(), nn.Linear(32, 6))
        with torch.no_grad():
            self.fc_loc[2].weight.mul_(0.01)
            self.fc_loc[2].bias.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
        self.cls = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.AvgPool2d(7), nn.Flatten(),
                                 nn.Linear(8 * 16, classes))

    def forward(self, x):
        theta = self.fc_loc(self.loc(x).flatten(1)).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        return self.cls(F.grid_sample(x, grid, align_corners=False))


class TopKMoe(nn.Module):
    """A sparse mixture-of-experts feed-forward layer (Switch/Mixtral style, computed densely):
    a router's top-2 experts per token, their softmax weights scattered over all experts, the
    experts' SwiGLU outputs combined by those weights, and a residual."""

    def __init__(self, dim=32, experts=4, hidden=64, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(dim, experts, bias=False)
        self.gate = nn.Parameter(torch.randn(experts, dim, hidden) / math.sqrt(dim))
        self.up = nn.Parameter(torch.randn(experts, dim, hidden) / math.sqrt(dim))
        self.down = nn.Parameter(torch.randn(experts, hidden, dim) / math.sqrt(hidden))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):  # [b, t, dim]
        h = self.norm(x)
        logits = self.router(h)
        top, idx = torch.topk(logits, self.top_k, dim=-1)
        weights = torch.zeros_like(logits).scatter(-1, idx, torch.softmax(top, dim=-1))
        g = torch.einsum("btd,edh->bteh", h, self.gate)
        u = torch.einsum("btd,edh->bteh", h, self.up)
        y = torch.einsum("bteh,ehd->bted", F.silu(g) * u, self.down)
        return x + (weights.unsqueeze(-1) * y).sum(dim=2)


class PointNetSmall(nn.Module):
    """PointNet (Qi et al., 2017) without the input transform: shared per-point MLPs as 1x1
    Conv1d + BatchNorm + ReLU, a symmetric max over points, a classifier."""

    def __init__(self, classes=8):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Conv1d(3, 32, 1), nn.BatchNorm1d(32), nn.ReLU(),
            nn.Conv1d(32, 64, 1), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(),
        )
        self.head = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, pts):  # [b, 3, n]
        return self.head(self.mlp(pts).amax(dim=2))
