r"""A tiny token CNN whose output is a phase-space state, split channel-wise into q and p ("headless" tokens).

The authors take a ResNet's layer-3 token grid, map it with a 1x1 conv + BatchNorm to 32 channels, and
split each token's channels into 16 q and 16 p (``split_qp``), with an identity projector. We keep that
protocol at MNIST scale: three 3x3 convolutions (stride 2, 2, 1) to a 7x7 map, average pooling to a
``grid`` x ``grid`` token grid, a 1x1 conv + BatchNorm to ``token_channels``; the first half of every token's
channels is q, the second half p, and the state is ``[q.flatten(), p.flatten()]`` of size
``grid**2 * token_channels``.
"""

from __future__ import annotations

import torch
from torch import nn

from geode.core.validation import check_int, check_tensor

__all__ = ["PhaseSpaceCNN"]


class PhaseSpaceCNN(nn.Module):
    """Images (batch, channels, H, W) -> phase-space states (batch, grid*grid*token_channels): q half, then p.

    Examples
    --------
    >>> import torch
    >>> PhaseSpaceCNN()(torch.zeros(2, 1, 28, 28)).shape
    torch.Size([2, 256])
    """

    def __init__(self, in_channels: int = 1, *, width: int = 32, token_channels: int = 16, grid: int = 4) -> None:
        super().__init__()
        check_int("in_channels", in_channels, low=1)
        w = check_int("width", width, low=1)
        self.token_channels = check_int("token_channels", token_channels, low=2)
        if token_channels % 2:
            raise ValueError(f"token_channels must be even (q and p halves); got {token_channels}")
        self.grid = check_int("grid", grid, low=1)
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, w // 2, 3, 2, 1),
            nn.BatchNorm2d(w // 2),
            nn.ReLU(),
            nn.Conv2d(w // 2, w, 3, 2, 1),
            nn.BatchNorm2d(w),
            nn.ReLU(),
            nn.Conv2d(w, w, 3, 1, 1),
            nn.BatchNorm2d(w),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(grid),
            nn.Conv2d(w, token_channels, 1),
            nn.BatchNorm2d(token_channels),
        )
        self.in_channels = in_channels
        self.state_dim = grid * grid * token_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Finite, non-empty images (batch, in_channels, H, W) -> states (batch, state_dim).

        An empty batch is refused: the BatchNorm layers need samples (in training mode they would count it).
        """
        check_tensor("x", x, ndim=4, nonempty=False)
        if x.shape[1] != self.in_channels:
            raise ValueError(f"x must be a (batch, {self.in_channels}, H, W) tensor; got shape {tuple(x.shape)}")
        check_tensor("x", x)
        t = self.body(x)
        h = self.token_channels // 2
        return torch.cat([t[:, :h].flatten(1), t[:, h:].flatten(1)], 1)
