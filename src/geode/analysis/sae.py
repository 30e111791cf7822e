r"""A small sparse autoencoder (ReLU, TopK or JumpReLU) in SAELens' tensor layout, its trainer and its fidelity.

The dictionary, with SAELens' parameter names and shapes (``W_enc [d_in, d_sae]``, ``b_enc [d_sae]``,
``W_dec [d_sae, d_in]``, ``b_dec [d_in]``; rows are row vectors :math:`x \in \mathbb R^{d_{in}}`):

.. math::

    a(x) = \sigma\big((x - b_{dec}) W_{enc} + b_{enc}\big), \qquad \hat x = a(x)\, W_{dec} + b_{dec},

with :math:`\sigma = \mathrm{ReLU}`, TopK (keep the ``k`` largest pre-activations, ReLU them, zero the
rest; Gao et al., 2024) or JumpReLU (:math:`\sigma(z)_j = z_j\, [z_j > \theta_j]` with a learned
per-feature ``threshold`` :math:`\theta`; Rajamanoharan et al., 2024, the GemmaScope dictionaries). Row
:math:`j` of :math:`W_{dec}` is feature :math:`j`'s direction.

Pretrained dictionaries load from a folder (:meth:`SparseAutoencoder.from_pretrained`): SAELens' layout
(``cfg.json`` + ``sae_weights.safetensors``) or GemmaScope's (``params.npz`` with ``W_enc, W_dec, b_enc,
b_dec, threshold``); :meth:`SparseAutoencoder.save_pretrained` writes the former (safetensors files need
the ``llm`` extra; ``.npz`` needs nothing).

:func:`train_sae` minimises, with Adam on minibatches,

.. math::

    \mathcal L = \frac1B \sum_b \|x_b - \hat x_b\|^2 + \lambda \frac1B \sum_b \sum_j a_j(x_b)\, \|W_{dec, j}\|

(the L1 term, weighted by the decoder norms, only for ReLU; TopK needs none and keeps unit-norm decoder
rows instead; a JumpReLU dictionary is fine-tuned with its thresholds held fixed, which keeps its
sparsity, and without a penalty: its straight-through threshold training is not implemented).
:func:`fvu` is the fraction of variance unexplained,
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
    activation : {"relu", "topk", "jumprelu"}
    k : int, optional
        Active features per input for TopK (required for ``"topk"``).
    seed : int
        Initialisation seed: decoder rows uniform on the unit sphere, ``W_enc = W_dec^T``, zero biases
        (and, for JumpReLU, zero thresholds: the same map as ReLU until thresholds are loaded).
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
        self.activation = check_choice("activation", activation, ("relu", "topk", "jumprelu"))
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
        if self.activation == "jumprelu":
            # a buffer, not a parameter: fine-tuning keeps it (no straight-through estimator here)
            self.register_buffer("threshold", torch.zeros(d_sae, dtype=dtype))

    @property
    def d_in(self) -> int:
        return int(self.W_dec.shape[1])

    @property
    def d_sae(self) -> int:
        return int(self.W_dec.shape[0])

    def _check(self, name: str, x: Any, width: int, what: str) -> None:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor of shape (..., {width}); got {type(x).__name__}")
        if x.ndim == 0 or x.shape[-1] != width:
            raise ValueError(f"{name} must have shape (..., {width}) ({what}); got shape {tuple(x.shape)}")
        if not bool(torch.isfinite(x.detach()).all()):
            raise ValueError(f"{name} must contain only finite values (found NaN or inf)")

    def pre_activations(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.b_dec) @ self.W_enc + self.b_enc

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Feature activations :math:`a(x)`, shape (n, d_sae).

        ``x`` is a finite tensor of shape ``(..., d_in)``; an empty batch gives an empty output.
        """
        self._check("x", x, self.d_in, "d_in")
        return self._encode(x)

    def _encode(self, x: torch.Tensor) -> torch.Tensor:
        pre = self.pre_activations(x)
        if self.activation == "relu":
            return torch.relu(pre)
        if self.activation == "jumprelu":
            return pre * (pre > self.threshold).to(pre.dtype)
        vals, idx = torch.topk(pre, self.k, dim=-1)
        return torch.zeros_like(pre).scatter(-1, idx, torch.relu(vals))

    def decode(self, a: torch.Tensor) -> torch.Tensor:
        """Reconstruction :math:`a W_{dec} + b_{dec}`, shape (n, d_in).

        ``a`` is a finite tensor of shape ``(..., d_sae)``; an empty batch gives an empty output.
        """
        self._check("a", a, self.d_sae, "d_sae")
        return self._decode(a)

    def _decode(self, a: torch.Tensor) -> torch.Tensor:
        return a @ self.W_dec + self.b_dec

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Reconstruction of ``x`` (a finite tensor of shape ``(..., d_in)``; an empty batch gives an empty output)."""
        self._check("x", x, self.d_in, "d_in")
        return self._decode(self._encode(x))

    def copy(self) -> SparseAutoencoder:
        """A deep copy (parameters detached from this one)."""
        return copy.deepcopy(self)

    @classmethod
    def from_saelens(cls, sae: Any, *, activation: str = "relu", k: int | None = None) -> SparseAutoencoder:
        """Copy the weights of an SAELens-style object with ``W_enc, b_enc, W_dec, b_dec`` attributes.

        The activation is not read from the object (SAELens has several); pass ``activation`` and ``k``.
        For ``activation="jumprelu"`` the object must also have ``threshold`` (shape ``[d_sae]``).
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
        names = ["W_enc", "b_enc", "W_dec", "b_dec"]
        if activation == "jumprelu":
            if not hasattr(sae, "threshold"):
                raise TypeError("activation='jumprelu' needs sae.threshold (one threshold per feature)")
            names.append("threshold")
        return cls._from_tensors({n: torch.as_tensor(getattr(sae, n)).detach() for n in names}, activation, k)

    @classmethod
    def _from_tensors(cls, w: dict[str, torch.Tensor], activation: str, k: int | None) -> SparseAutoencoder:
        w_dec = w["W_dec"]
        if w_dec.ndim != 2:
            raise ValueError(f"W_dec must have shape [d_sae, d_in]; got {tuple(w_dec.shape)}")
        d_sae, d_in = w_dec.shape
        shapes = {"W_enc": (d_in, d_sae), "b_enc": (d_sae,), "b_dec": (d_in,), "threshold": (d_sae,)}
        for n, shape in shapes.items():
            if n in w and tuple(w[n].shape) != shape:
                raise ValueError(
                    f"{n} must have shape {shape} (from W_dec {tuple(w_dec.shape)}); got {tuple(w[n].shape)}"
                )
        out = cls(d_in, d_sae, activation=activation, k=k, dtype=w_dec.dtype)
        with torch.no_grad():
            for n in ("W_enc", "b_enc", "W_dec", "b_dec") + (("threshold",) if activation == "jumprelu" else ()):
                getattr(out, n).copy_(w[n].to(w_dec.dtype))
        return out

    @classmethod
    def from_pretrained(cls, path: Any, *, activation: str | None = None, k: int | None = None) -> SparseAutoencoder:
        """Load a dictionary from a folder: SAELens' ``cfg.json`` + ``sae_weights.safetensors``, or ``params.npz``.

        Parameters
        ----------
        path : str or Path
            The folder (or the weights file itself). ``params.npz`` is GemmaScope's layout (``W_enc``,
            ``W_dec``, ``b_enc``, ``b_dec``, ``threshold``); ``*.safetensors`` SAELens' (same names).
        activation : {"relu", "topk", "jumprelu"}, optional
            Default: from ``cfg.json`` (``architecture``: ``"standard"`` is ReLU, ``"jumprelu"``, ``"topk"``;
            or ``activation_fn_str``), else ``"jumprelu"`` when a ``threshold`` is stored, else ``"relu"``.
        k : int, optional
            TopK's k; default from ``cfg.json`` (``activation_fn_kwargs.k`` or ``k``).
        """
        import json
        from pathlib import Path

        p = Path(path)
        if p.is_dir():
            files = sorted(p.glob("*.safetensors")) or sorted(p.glob("*.npz"))
            if not files:
                raise FileNotFoundError(f"path {str(p)!r} holds no *.safetensors or *.npz weights file")
            weights, cfg_file = files[0], p / "cfg.json"
        elif p.is_file():
            weights, cfg_file = p, p.parent / "cfg.json"
        else:
            raise FileNotFoundError(f"path {str(p)!r} does not exist")
        if weights.suffix == ".npz":
            with np.load(weights) as z:
                w = {n: torch.as_tensor(z[n]) for n in z.files}
        elif weights.suffix == ".safetensors":
            from safetensors.torch import load_file

            w = load_file(str(weights))
        else:
            raise ValueError(f"path: expected a .safetensors or .npz weights file; got {weights.name!r}")
        missing = [n for n in ("W_enc", "b_enc", "W_dec", "b_dec") if n not in w]
        if missing:
            raise ValueError(f"{weights.name} lacks the tensors {missing} (SAELens names W_enc, b_enc, W_dec, b_dec)")
        cfg = json.loads(cfg_file.read_text()) if cfg_file.is_file() else {}
        if activation is None:
            arch = str(cfg.get("architecture", cfg.get("activation_fn_str", ""))).lower()
            activation = {"standard": "relu", "relu": "relu", "topk": "topk", "jumprelu": "jumprelu"}.get(
                arch, "jumprelu" if "threshold" in w else "relu"
            )
        if activation == "topk" and k is None:
            k = (cfg.get("activation_fn_kwargs") or {}).get("k", cfg.get("k"))
        if activation == "jumprelu" and "threshold" not in w:
            raise ValueError(f"activation='jumprelu' needs a 'threshold' tensor; {weights.name} has {sorted(w)}")
        return cls._from_tensors(w, activation, None if k is None else int(k))

    def save_pretrained(self, path: Any) -> None:
        """Write ``cfg.json`` and ``sae_weights.safetensors`` (SAELens' layout) into the folder ``path``."""
        import json
        from pathlib import Path

        from safetensors.torch import save_file

        p = Path(path)
        p.mkdir(parents=True, exist_ok=True)
        names = ["W_enc", "b_enc", "W_dec", "b_dec"] + (["threshold"] if self.activation == "jumprelu" else [])
        tensors = {n: getattr(self, n).detach().contiguous().clone() for n in names}
        save_file(tensors, str(p / "sae_weights.safetensors"))
        arch = {"relu": "standard", "topk": "topk", "jumprelu": "jumprelu"}[self.activation]
        cfg: dict[str, Any] = {"architecture": arch, "d_in": self.d_in, "d_sae": self.d_sae}
        if self.k is not None:
            cfg["activation_fn_kwargs"] = {"k": self.k}
        (p / "cfg.json").write_text(json.dumps(cfg, indent=1))


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
        (JumpReLU dictionaries are loaded, not trained from scratch here; they can be fine-tuned via ``init``.)
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
        if activation == "jumprelu":
            raise ValueError(
                "activation='jumprelu' cannot be trained from scratch here (no threshold estimator); "
                "load one with SparseAutoencoder.from_pretrained and fine-tune it via init="
            )
        x = _as_tensor("X", X, torch.float32)
        sae = SparseAutoencoder(x.shape[1], d_sae, activation=activation, k=k, seed=seed, dtype=x.dtype)
        with torch.no_grad():
            sae.b_dec.copy_(x.mean(0))
    gen = torch_generator(seed + 1)
    opt = torch.optim.Adam(sae.parameters(), lr=lr)
    n = x.shape[0]
    for _ in range(steps):
        xb = x[torch.randint(0, n, (min(batch_size, n),), generator=gen)]
        a = sae._encode(xb)  # x was validated once above
        rec = ((xb - sae._decode(a)) ** 2).sum(-1).mean()
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
