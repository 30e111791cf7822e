"""``RubiConv``: a long-convolution ``nn.Module`` for packed sequences (a drop-in Hyena-style mixer)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from geode.core import check_choice, check_int, check_real
from geode.layers.attention import check_cu_seqlens
from geode.layers.rubiconv.conv import PackedConvPlan, packed_long_conv

__all__ = ["RubiConv"]


class _Sin(nn.Module):
    """:math:`\\sin(\\omega z)` with a learnable per-feature frequency (Hyena's implicit-filter activation)."""

    def __init__(self, dim: int, w: float) -> None:
        super().__init__()
        self.freq = nn.Parameter(torch.full((dim,), float(w)))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return torch.sin(self.freq * z)


class RubiConv(nn.Module):
    """Per-channel causal long convolution over packed documents, with an implicit or explicit filter.

    For a packed input :math:`x \\in \\mathbb{R}^{N \\times D}` with document offsets ``cu_seqlens``,

    .. math::

        y_{t,c} = \\sum_{s=b(t)}^{t} h_{c,\\, t-s}\\, x_{s,c} \\;+\\; \\beta_c\\, x_{t,c},

    where :math:`b(t)` is the start of :math:`t`'s document (no leakage between documents; computed by
    :func:`~geode.layers.rubiconv.packed_long_conv`) and :math:`\\beta` is an optional learnable skip
    (Hyena's ``D`` term). The filter :math:`h \\in \\mathbb{R}^{D \\times T}` is evaluated only up to the
    longest document of the batch, :math:`T = \\max_d n_d \\le` ``max_len``.

    Filters (the paper does not describe its layer; we follow Hyena, Poli et al. 2023):

    ``"implicit"``
        :math:`h_{c,t} = \\mathrm{MLP}(z(t))_c \\cdot e^{-\\alpha_c t / \\mathrm{max\\_len}}` with positional
        features :math:`z(t) = (t/\\mathrm{max\\_len}, \\cos(2\\pi f t/\\mathrm{max\\_len}),
        \\sin(2\\pi f t/\\mathrm{max\\_len}))_{f=1..F}`, an MLP with sine activations, and fixed decay rates
        :math:`\\alpha_c` spread linearly over ``decay`` (Hyena's exponential modulation; defaults
        :math:`(\\ln 100/1.5, \\ln 100/0.3)`). Parameters do not grow with ``max_len``.
    ``"explicit"``
        :math:`h` is a ``(D, max_len)`` parameter, initialised as Gaussian noise times the same decay
        window, scaled to unit :math:`\\ell_2` norm per channel.

    Parameters
    ----------
    channels : int
        :math:`D`.
    max_len : int
        Longest document the layer accepts (the filter's support).
    filter : {"implicit", "explicit"}
        Filter parametrisation (default ``"implicit"``).
    filter_hidden : int
        Width of the implicit filter's MLP (default 64).
    filter_freqs : int
        Number :math:`F` of positional frequencies (default 8).
    filter_omega : float
        Initial sine frequency of the MLP activations (default 1.0).
    decay : (float, float)
        Range of the decay rates :math:`\\alpha_c` (default :math:`(3.07, 15.35)`).
    skip : bool
        Add the learnable per-channel skip :math:`\\beta \\odot x` (default ``True``).

    NaN and inf in ``x`` propagate as in torch's own layers (no per-step scan of the input).

    Examples
    --------
    >>> layer = RubiConv(channels=8, max_len=64)
    >>> x = torch.randn(40, 8)
    >>> layer(x, cu_seqlens=[0, 10, 40]).shape
    torch.Size([40, 8])
    """

    def __init__(
        self,
        channels: int,
        max_len: int,
        *,
        filter: str = "implicit",
        filter_hidden: int = 64,
        filter_freqs: int = 8,
        filter_omega: float = 1.0,
        decay: Sequence[float] = (math.log(100.0) / 1.5, math.log(100.0) / 0.3),
        skip: bool = True,
    ) -> None:
        super().__init__()
        self.channels = check_int("channels", channels, low=1)
        self.max_len = check_int("max_len", max_len, low=1)
        self.filter_kind = check_choice("filter", filter, ("implicit", "explicit"))
        filter_hidden = check_int("filter_hidden", filter_hidden, low=1)
        self.filter_freqs = check_int("filter_freqs", filter_freqs, low=1)
        filter_omega = check_real("filter_omega", filter_omega, low=0.0, low_inclusive=False)
        if len(decay) != 2:
            raise ValueError(f"decay must be a pair (low, high); got {decay!r}")
        lo = check_real("decay[0]", decay[0], low=0.0)
        hi = check_real("decay[1]", decay[1], low=lo)
        self.register_buffer("alpha", torch.linspace(lo, hi, self.channels), persistent=False)
        if self.filter_kind == "implicit":
            emb = 1 + 2 * self.filter_freqs
            self.filter_mlp = nn.Sequential(
                nn.Linear(emb, filter_hidden),
                _Sin(filter_hidden, filter_omega),
                nn.Linear(filter_hidden, filter_hidden),
                _Sin(filter_hidden, filter_omega),
                nn.Linear(filter_hidden, self.channels, bias=False),
            )
            self.weight = None
        else:
            t = torch.arange(self.max_len, dtype=torch.float32) / self.max_len
            w = torch.randn(self.channels, self.max_len) * torch.exp(-self.alpha[:, None] * t)
            self.weight = nn.Parameter(w / w.norm(dim=1, keepdim=True))
            self.filter_mlp = None
        self.skip = nn.Parameter(torch.ones(self.channels)) if skip else None

    def kernel(self, length: int | None = None) -> torch.Tensor:
        """The filter :math:`h`, shape ``(channels, length)`` (default ``max_len``), in the parameters' dtype."""
        length = self.max_len if length is None else check_int("length", length, low=1, high=self.max_len)
        if self.weight is not None:
            return self.weight[:, :length]
        first = self.filter_mlp[0].weight
        t = torch.arange(length, device=first.device, dtype=first.dtype) / self.max_len
        f = torch.arange(1, self.filter_freqs + 1, device=first.device, dtype=first.dtype)
        phase = 2 * math.pi * t[:, None] * f[None, :]
        z = torch.cat([t[:, None], torch.cos(phase), torch.sin(phase)], dim=1)  # (length, 1 + 2F)
        h = self.filter_mlp(z).T  # (channels, length)
        return h * torch.exp(-self.alpha.to(first.dtype)[:, None] * t[None, :])

    def forward(
        self,
        x: torch.Tensor,
        cu_seqlens: Sequence[int] | torch.Tensor,
        *,
        plan: PackedConvPlan | None = None,
    ) -> torch.Tensor:
        """Apply the layer to a packed ``x`` of shape ``(N, D)`` or ``(B, N, D)``.

        Parameters
        ----------
        x : torch.Tensor
            Packed input, same dtype as the layer's parameters.
        cu_seqlens : 1-D integer tensor or sequence of int
            Document offsets :math:`0 = c_0 \\le \\dots \\le c_M = N`; every document at most ``max_len`` long.
        plan : PackedConvPlan, optional
            A plan from :func:`~geode.layers.rubiconv.plan_packed_conv` for these offsets and kernel length
            ``min(max_len, longest document)``.
        """
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor; got {type(x).__name__}")
        if x.ndim not in (2, 3) or x.shape[-1] != self.channels:
            raise ValueError(
                f"x must have shape (N, {self.channels}) or (B, N, {self.channels}); got {tuple(x.shape)}"
            )
        n = x.shape[-2]
        cu = check_cu_seqlens(cu_seqlens, n)
        longest = int((cu[1:] - cu[:-1]).max()) if n > 0 else 0
        if longest > self.max_len:
            raise ValueError(f"a document of cu_seqlens is {longest} tokens long, more than max_len={self.max_len}")
        if n == 0:
            return x.clone()
        h = self.kernel(max(1, longest))
        if h.dtype != x.dtype:
            raise TypeError(f"x dtype {x.dtype} does not match the layer's parameters ({h.dtype}); cast one of them")
        y = packed_long_conv(x, h, cu, plan=plan)
        if self.skip is not None:
            y = y + self.skip.to(x.dtype) * x
        return y

    def extra_repr(self) -> str:
        skip = self.skip is not None
        return f"channels={self.channels}, max_len={self.max_len}, filter={self.filter_kind!r}, skip={skip}"
