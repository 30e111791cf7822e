r"""A small sparse autoencoder (ReLU or TopK) in SAELens' tensor layout, its trainer and its fidelity.

The dictionary, with SAELens' parameter names and shapes (``W_enc [d_in, d_sae]``, ``b_enc [d_sae]``,
``W_dec [d_sae, d_in]``, ``b_dec [d_in]``; rows are row vectors :math:`x \in \mathbb R^{d_{in}}`):

.. math::

    a(x) = \sigma\big((x - b_{dec}) W_{enc} + b_{enc}\big), \qquad \hat x = a(x)\, W_{dec} + b_{dec},

with :math:`\sigma = \mathrm{ReLU}` or TopK (keep the ``k`` largest pre-activations, ReLU them, zero the
rest; Gao et al., 2024). Row :math:`j` of :math:`W_{dec}` is feature :math:`j`'s direction.

:func:`train_sae` minimises, with Adam on minibatches,

.. math::

    \mathcal L = \frac1B \sum_b \|x_b - \hat x_b\|^2 + \lambda \frac1B \sum_b \sum_j a_j(x_b)\, \|W_{dec, j}\|

(the L1 term, weighted by the decoder norms, only for ReLU; TopK needs none and keeps unit-norm decoder
rows instead). :func:`fvu` is the fraction of variance unexplained,
:math:`\sum_i \|x_i - \hat x_i\|^2 / \sum_i \|x_i - \bar x\|^2`.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.random import torch_generator
from geode.core.validation import check_choice, check_int, check_real

__all__ = ["SparseAutoencoder", "fvu", "train_sae"]


def _as_tensor(name: str, x: Any, dtype: torch.dtype, d_in: int | None = None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        t = x.detach().to(dtype)
    else:
        try:
            t = torch.as_tensor(np.asarray(x, dtype=float), dtype=dtype)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be an array of shape (n_samples, d_in); got {type(x).__name__}") from None
    if t.ndim != 2:
        raise ValueError(f"{name} must have shape (n_samples, d_in); got shape {tuple(t.shape)}")
    if d_in is not None and t.shape[1] != d_in:
        raise ValueError(f"{name} must have d_in = {d_in} columns; got shape {tuple(t.shape)}")
    if t.shape[0] < 1:
        raise ValueError(f"{name} must have at least one row")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return t


class SparseAutoencoder(nn.Module):
    """Sparse autoencoder with a ReLU or TopK activation, SAELens layout (see the module docstring).

    Parameters
    ----------
    d_in : int
        Activation dimension.
    d_sae : int
        Number of dictionary features.
    activation : {"relu", "topk"}
    k : int, optional
        Active features per input for TopK (required for ``"topk"``).
    seed : int
        Initialisation seed: decoder rows uniform on the unit sphere, ``W_enc = W_dec^T``, zero biases.
    dtype : torch.dtype
    """

    def __init__(
        self,
        d_in: int,
        d_sae: int,
        *,
        activation: str = "relu",
        k: int | None = None,
        seed: int = 0,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        d_in = check_int("d_in", d_in, low=1)
        d_sae = check_int("d_sae", d_sae, low=1)
        self.activation = check_choice("activation", activation, ("relu", "topk"))
        if activation == "topk":
            if k is None:
                raise ValueError("k (active features per input) is required for activation='topk'")
            k = check_int("k", k, low=1, high=d_sae)
        self.k = k
        w = torch.randn(d_sae, d_in, generator=torch_generator(seed), dtype=torch.float64)
        w = (w / w.norm(dim=1, keepdim=True)).to(dtype)
        self.W_dec = nn.Parameter(w.clone())
        self.W_enc = nn.Parameter(w.T.clone())
        self.b_enc = nn.Parameter(torch.zeros(d_sae, dtype=dtype))
        self.b_dec = nn.Parameter(torch.zeros(d_in, dtype=dtype))

    @property
    def d_in(self) -> int:
        return int(self.W_dec.shape[1])

    @property
    def d_sae(self) -> int:
        return int(self.W_dec.shape[0])

    def pre_activations(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.b_dec) @ self.W_enc + self.b_enc

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Feature activations :math:`a(x)`, shape (n, d_sae)."""
        pre = self.pre_activations(x)
        if self.activation == "relu":
            return torch.relu(pre)
        vals, idx = torch.topk(pre, self.k, dim=-1)
        return torch.zeros_like(pre).scatter(-1, idx, torch.relu(vals))

    def decode(self, a: torch.Tensor) -> torch.Tensor:
        """Reconstruction :math:`a W_{dec} + b_{dec}`, shape (n, d_in)."""
        return a @ self.W_dec + self.b_dec

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x))

    def copy(self) -> SparseAutoencoder:
        """A deep copy (parameters detached from this one)."""
        return copy.deepcopy(self)

    @classmethod
    def from_saelens(cls, sae: Any, *, activation: str = "relu", k: int | None = None) -> SparseAutoencoder:
        """Copy the weights of an SAELens-style object with ``W_enc, b_enc, W_dec, b_dec`` attributes.

        The activation is not read from the object (SAELens has several); pass ``activation`` and ``k``.
        """
        missing = [n for n in ("W_enc", "b_enc", "W_dec", "b_dec") if not hasattr(sae, n)]
        if missing:
            raise TypeError(f"sae must have attributes W_enc, b_enc, W_dec, b_dec; missing {missing}")
        w_dec = torch.as_tensor(sae.W_dec).detach()
        d_sae, d_in = w_dec.shape
        if tuple(torch.as_tensor(sae.W_enc).shape) != (d_in, d_sae):
            raise ValueError(
                f"sae.W_enc must have shape {(d_in, d_sae)}; got {tuple(torch.as_tensor(sae.W_enc).shape)}"
            )
        out = cls(d_in, d_sae, activation=activation, k=k, dtype=w_dec.dtype)
        with torch.no_grad():
            for n in ("W_enc", "b_enc", "W_dec", "b_dec"):
                getattr(out, n).copy_(torch.as_tensor(getattr(sae, n)).detach())
        return out


def fvu(sae: SparseAutoencoder, X: Any) -> float:
    r"""Fraction of variance unexplained :math:`\sum_i \|x_i - \hat x_i\|^2 / \sum_i \|x_i - \bar x\|^2`."""
    if not isinstance(sae, SparseAutoencoder):
        raise TypeError(f"sae must be a SparseAutoencoder; got {type(sae).__name__}")
    x = _as_tensor("X", X, sae.W_dec.dtype, sae.d_in)
    if x.shape[0] < 2:
        raise ValueError("X needs at least 2 rows for a variance")
    with torch.no_grad():
        err = ((x - sae(x)) ** 2).sum()
        var = ((x - x.mean(0)) ** 2).sum()
    if float(var) <= 0.0:
        raise ValueError("X is constant (zero variance): FVU is undefined")
    return float(err / var)


def train_sae(
    X: Any,
    d_sae: int | None = None,
    *,
    activation: str = "relu",
    k: int | None = None,
    l1_coeff: float = 1e-2,
    steps: int = 2000,
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
    init: SparseAutoencoder | None = None,
) -> SparseAutoencoder:
    r"""Train a sparse autoencoder on activations ``X`` (or fine-tune ``init`` on them).

    Parameters
    ----------
    X : array_like or torch.Tensor, shape (n, d_in)
        Activations.
    d_sae : int, optional
        Dictionary size (required unless ``init`` is given).
    activation : {"relu", "topk"}
    k : int, optional
        TopK's active features per input.
    l1_coeff : float
        :math:`\lambda` of the decoder-norm-weighted L1 penalty (ReLU only), ``>= 0``.
    steps, batch_size, lr : int, int, float
        Adam steps, minibatch size (sampled with replacement), learning rate.
    seed : int
        Initialisation and minibatch seed.
    init : SparseAutoencoder, optional
        Start from a copy of this dictionary (fine-tuning); ``d_sae``, ``activation`` and ``k`` then come
        from it. ``b_dec`` is otherwise initialised at the mean of ``X``.

    Returns
    -------
    SparseAutoencoder
    """
    steps = check_int("steps", steps, low=0)
    batch_size = check_int("batch_size", batch_size, low=1)
    lr = check_real("lr", lr, low=0.0, low_inclusive=False)
    l1_coeff = check_real("l1_coeff", l1_coeff, low=0.0)
    if init is not None:
        if not isinstance(init, SparseAutoencoder):
            raise TypeError(f"init must be a SparseAutoencoder; got {type(init).__name__}")
        sae = init.copy()
        x = _as_tensor("X", X, sae.W_dec.dtype, sae.d_in)
    else:
        if d_sae is None:
            raise ValueError("d_sae is required when init is not given")
        x = _as_tensor("X", X, torch.float32)
        sae = SparseAutoencoder(x.shape[1], d_sae, activation=activation, k=k, seed=seed, dtype=x.dtype)
        with torch.no_grad():
            sae.b_dec.copy_(x.mean(0))
    gen = torch_generator(seed + 1)
    opt = torch.optim.Adam(sae.parameters(), lr=lr)
    n = x.shape[0]
    for _ in range(steps):
        xb = x[torch.randint(0, n, (min(batch_size, n),), generator=gen)]
        a = sae.encode(xb)
        rec = ((xb - sae.decode(a)) ** 2).sum(-1).mean()
        loss = rec
        if sae.activation == "relu" and l1_coeff > 0:
            loss = rec + l1_coeff * (a * sae.W_dec.norm(dim=1)).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sae.activation == "topk":
            with torch.no_grad():
                sae.W_dec.div_(sae.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-12))
    sae.eval()
    return sae
