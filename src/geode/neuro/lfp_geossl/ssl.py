r"""Single-channel LFP encoder, the masked-prediction and geometry-aware SSL objectives, and the Welch-PSD features.

Encoder (a tiny wav2vec2-shaped backbone, trained from scratch): each window (2 s at 250 Hz) is z-scored, a
three-layer strided 1-D conv feature encoder (kernels 10/3/3, strides 5/2/2, GELU, group norm after the first,
as wav2vec2's ``feat_extract_norm="group"``) gives frames :math:`h_t \in \mathbb{R}^{d}`; a learned positional
embedding and a 2-layer pre-norm transformer (4 heads) give the context :math:`c_t`; the window's embedding is
:math:`z = \operatorname{mean}_t c_t`.

Masked prediction (wav2vec2 without the quantiser): frames are masked in spans (start probability ``mask_prob``,
``span`` frames, replaced by a learned mask vector); at each masked frame the prediction :math:`W c_t` must
identify its own target :math:`U h_t` among the targets of all frames of the same window (InfoNCE on cosine
similarity / temperature 0.1), as wav2vec2 draws its distractors from the same utterance.

Geometry-aware objective (inferred from the abstract: "constrain the embedding space to mirror physical channel
layout along the probe"): channels of one probe recorded in the same time window form a group; with
:math:`u = g(z)/\|g(z)\|` (a 2-layer projection head) the multi-positive InfoNCE

.. math:: L_{geo} = -\frac1{|A|}\sum_{i\in A} \log
          \frac{\sum_{j \in P(i)} e^{u_i^\top u_j/\tau}}{\sum_{k \ne i} e^{u_i^\top u_k/\tau}}, \qquad
          P(i) = \{j \ne i: \text{group}_j = \text{group}_i,\ |y_j - y_i| \le \delta\},

pulls channels within :math:`\delta` µm on the shank together and pushes farther channels of the same probe and
window (and all other groups) apart; :math:`A` are the anchors with at least one positive.
:func:`distance_preserving_loss` is the other reading the notes list,
:math:`\operatorname{mean}_{i<j,\ \text{same group}} (\|z_i - z_j\| - \alpha |y_i - y_j|)^2`.

Welch-PSD baseline: :math:`\log_{10}` of ``scipy.signal.welch`` (Hann, ``nperseg``, 50% overlap) from 1 to
``fmax`` Hz.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.validation import check_array, check_int, check_real, check_tensor

__all__ = [
    "LFPEncoder",
    "distance_preserving_loss",
    "geometry_contrastive_loss",
    "masked_prediction_loss",
    "welch_features",
]


def _check_windows(x: Any, *, nonempty: bool = False) -> None:
    check_tensor("x", x, ndim=2, nonempty=nonempty, floating=True)


class LFPEncoder(nn.Module):
    """Single-channel LFP windows (batch, samples) -> embeddings (batch, dim); see the module docstring.

    The windows must be a finite floating-point tensor; an empty batch gives an empty output.

    Examples
    --------
    >>> import torch
    >>> LFPEncoder()(torch.randn(3, 500)).shape
    torch.Size([3, 32])
    """

    def __init__(self, dim: int = 32, *, n_samples: int = 500, layers: int = 2, heads: int = 4) -> None:
        super().__init__()
        self.dim = check_int("dim", dim, low=4)
        self.n_samples = check_int("n_samples", n_samples, low=32)
        check_int("heads", heads, low=1)
        if dim % heads:
            raise ValueError(f"dim must be divisible by heads; got {dim} and {heads}")
        self.features = nn.Sequential(
            nn.Conv1d(1, dim, 10, 5),
            nn.GroupNorm(dim, dim),
            nn.GELU(),
            nn.Conv1d(dim, dim, 3, 2),
            nn.GELU(),
            nn.Conv1d(dim, dim, 3, 2),
            nn.GELU(),
        )
        with torch.no_grad():
            self.n_frames = int(self.features(torch.zeros(1, 1, n_samples)).shape[-1])
        self.norm = nn.LayerNorm(dim)
        self.pos = nn.Parameter(0.02 * torch.randn(self.n_frames, dim))
        self.mask_emb = nn.Parameter(0.1 * torch.randn(dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.context = nn.TransformerEncoder(layer, check_int("layers", layers, low=1), enable_nested_tensor=False)

    def frames(self, x: torch.Tensor) -> torch.Tensor:
        """The feature encoder's frames (batch, n_frames, dim) of z-scored windows."""
        _check_windows(x)
        if x.shape[1] != self.n_samples:
            raise ValueError(f"x must have {self.n_samples} samples per window; got {x.shape[1]}")
        x = (x - x.mean(1, keepdim=True)) / (x.std(1, keepdim=True) + 1e-6)
        return self.norm(self.features(x.unsqueeze(1)).transpose(1, 2))

    def contextualise(self, h: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The context network on frames ``h``, the ``mask``-ed frames (batch, n_frames) replaced first."""
        if mask is not None:
            h = torch.where(mask.unsqueeze(-1), self.mask_emb.expand_as(h), h)
        return self.context(h + self.pos)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.contextualise(self.frames(x)).mean(1)


def _span_mask(batch: int, frames: int, prob: float, span: int, gen: torch.Generator) -> torch.Tensor:
    starts = torch.rand(batch, frames, generator=gen) < prob
    mask = torch.zeros(batch, frames, dtype=torch.bool)
    for k in range(span):
        mask[:, k:] |= starts[:, : frames - k]
    # at least one masked frame per window
    none = ~mask.any(1)
    if none.any():
        mask[none, torch.randint(0, frames, (int(none.sum()),), generator=gen)] = True
    return mask


def masked_prediction_loss(
    encoder: LFPEncoder,
    heads: nn.Module,
    x: torch.Tensor,
    gen: torch.Generator,
    *,
    mask_prob: float = 0.15,
    span: int = 3,
    temperature: float = 0.1,
) -> torch.Tensor:
    """wav2vec2-style masked contrastive prediction on windows ``x`` (batch, samples).

    ``heads`` is a module with ``heads.pred`` and ``heads.target`` (two ``Linear(dim, dim)``), e.g.
    ``nn.ModuleDict({"pred": nn.Linear(d, d), "target": nn.Linear(d, d)})``. ``x`` must hold at least one window.
    """
    _check_windows(x, nonempty=True)
    check_real("mask_prob", mask_prob, low=0.0, high=1.0, low_inclusive=False)
    check_int("span", span, low=1)
    temperature = check_real("temperature", temperature, low=0.0, low_inclusive=False)
    h = encoder.frames(x)
    b, t, _ = h.shape
    mask = _span_mask(b, t, mask_prob, span, gen)
    c = encoder.contextualise(h, mask)
    p = nn.functional.normalize(heads["pred"](c), dim=-1)
    q = nn.functional.normalize(heads["target"](h), dim=-1)
    logits = torch.einsum("btd,bsd->bts", p, q) / temperature  # (b, t, t): frame t against every frame s
    labels = torch.arange(t).expand(b, t)
    return nn.functional.cross_entropy(logits[mask], labels[mask])


def _check_geometry(z: Any, depth: Any, group: Any, *, z_name: str = "z") -> None:
    if not isinstance(z, torch.Tensor) or z.ndim != 2:
        raise ValueError(f"{z_name} must be a 2-D tensor (batch, dim); got shape {getattr(z, 'shape', None)}")
    if not bool(torch.isfinite(z).all()):
        raise ValueError(f"{z_name} must be finite (it holds NaN or inf)")
    for name, v in (("depth", depth), ("group", group)):
        if not isinstance(v, torch.Tensor) or v.ndim != 1:
            raise ValueError(f"{name} must be a 1-D tensor (batch,); got shape {getattr(v, 'shape', None)}")
        if v.shape[0] != z.shape[0]:
            raise ValueError(
                f"{name} must have one entry per embedding: {z_name} has {z.shape[0]}, {name} {v.shape[0]}"
            )
    if not bool(torch.isfinite(depth.double()).all()):
        raise ValueError(
            "unknown channel layout: depth holds NaN or inf; every channel needs its position on the probe"
        )


def geometry_contrastive_loss(
    u: torch.Tensor, depth: torch.Tensor, group: torch.Tensor, *, delta: float = 40.0, temperature: float = 0.1
) -> torch.Tensor:
    r"""Multi-positive InfoNCE whose positives are channels of the same probe and window within ``delta`` µm.

    Parameters
    ----------
    u : Tensor (batch, dim)
        Projected embeddings (normalised here).
    depth : Tensor (batch,)
        Each channel's position on the shank (µm); NaN means an unknown layout and is refused.
    group : Tensor (batch,)
        Probe-and-window id: only channels of one group are compared by position.
    """
    _check_geometry(u, depth, group, z_name="u")
    delta = check_real("delta", delta, low=0.0)
    temperature = check_real("temperature", temperature, low=0.0, low_inclusive=False)
    u = nn.functional.normalize(u, dim=1)
    s = u @ u.T / temperature
    eye = torch.eye(u.shape[0], dtype=torch.bool)
    pos = (group[:, None] == group[None, :]) & ((depth[:, None] - depth[None, :]).abs() <= delta) & ~eye
    anchors = pos.any(1)
    if not bool(anchors.any()):
        raise ValueError(f"no channel has a positive within delta={delta} µm in its group; sample neighbours")
    s = s.masked_fill(eye, float("-inf"))
    log_den = torch.logsumexp(s, 1)
    log_num = torch.logsumexp(s.masked_fill(~pos, float("-inf")), 1)
    return (log_den - log_num)[anchors].mean()


def distance_preserving_loss(
    z: torch.Tensor, depth: torch.Tensor, group: torch.Tensor, *, alpha: float = 1.0 / 100.0
) -> torch.Tensor:
    r"""Distance-preserving loss :math:`\operatorname{mean}_{i<j} (\|z_i - z_j\| - \alpha|y_i - y_j|)^2`.

    The mean runs over pairs :math:`i < j` of one group; ``alpha`` is in embedding units per µm.
    """
    _check_geometry(z, depth, group)
    alpha = check_real("alpha", alpha, low=0.0, low_inclusive=False)
    iu = torch.triu_indices(z.shape[0], z.shape[0], 1)
    same = group[iu[0]] == group[iu[1]]
    if not bool(same.any()):
        raise ValueError("no two channels share a group; the layout constrains nothing")
    i, j = iu[0][same], iu[1][same]
    dz = (z[i] - z[j]).square().sum(1).add(1e-12).sqrt()
    return (dz - alpha * (depth[i] - depth[j]).abs()).square().mean()


def welch_features(x: Any, fs: float, *, nperseg: int = 128, fmax: float = 100.0) -> np.ndarray:
    """log10 Welch PSD (1 Hz to ``fmax``) of each row of ``x`` (..., samples); shape (..., n_freqs).

    ``x`` must be finite with at least ``nperseg`` samples per row; an empty batch (no rows) gives an empty output.
    """
    from scipy.signal import welch

    x = check_array("x", x)
    if x.ndim < 1:
        raise ValueError(f"x must be an array (..., samples); got shape {x.shape}")
    fs = check_real("fs", fs, low=0.0, low_inclusive=False)
    nperseg = check_int("nperseg", nperseg, low=8)
    if nperseg > x.shape[-1]:
        raise ValueError(f"x must have at least nperseg={nperseg} samples per row; got shape {x.shape}")
    f, p = welch(x, fs=fs, nperseg=nperseg, axis=-1)
    keep = (f >= 1.0) & (f <= check_real("fmax", fmax, low=1.0))
    return np.log10(p[..., keep] + 1e-12)
