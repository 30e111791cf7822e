r"""A variational Bayesian last layer (VBLL) for classification, and the calibration metrics.

Features :math:`\phi \in \mathbb{R}^D` come from a deterministic backbone. Logits are
:math:`z = W \phi + b + \varepsilon` with :math:`\varepsilon \sim \mathcal{N}(0, \operatorname{diag}\sigma^2)`,
a point-estimate bias :math:`b` and a Gaussian variational posterior over the rows of :math:`W`,
:math:`q(w_k) = \mathcal{N}(\bar w_k, S_k)`, independent across classes; :math:`S_k` is diagonal
(:math:`\operatorname{diag}(e^{2\ell_k})`) or diagonal plus low rank
(:math:`\operatorname{diag}(e^{2\ell_k}) + U_k U_k^\top`).
The logits are then independent Gaussians with

.. math::

    \bar z_k = \bar w_k^\top \phi + b_k, \qquad v_k = \phi^\top S_k \phi + \sigma_k^2 .

**Training** (Harrison et al., 2024, discriminative VBLL): maximise Jensen's bound on the expected
log-likelihood,
:math:`\mathbb{E}_q \log \operatorname{softmax}(z)_y \ge \bar z_y - \log \sum_k \exp(\bar z_k + v_k / 2)`,
minus :math:`\frac{1}{N}` times the KL divergence to the prior :math:`p(w_k) = \mathcal{N}(0, \tau I)`
and an inverse-gamma log-prior on the noise variances:

.. math::

    \mathcal{L}(\bar W, S, \sigma) = -\frac{1}{B}\sum_{i} \Big[\bar z_{i y_i} - \operatorname{LSE}_k\big(\bar z_{ik}
        + \tfrac12 v_{ik}\big)\Big] + \frac{w}{N}\Big[\sum_k \mathrm{KL}\big(q(w_k)\,\Vert\,p(w_k)\big)
        - \sum_k \log \mathrm{IG}(\sigma_k^2; a, \beta)\Big],

with

.. math::

    \mathrm{KL} = \tfrac12\big[\operatorname{tr}(S_k)/\tau + \lVert \bar w_k\rVert^2/\tau - D + D\log\tau
        - \log\det S_k\big].

**Prediction** needs one backbone pass: :math:`p(y \mid x) = \mathbb{E}_{z}[\operatorname{softmax}(z)]`
estimated by Monte Carlo over the logit Gaussians (default), or the probit approximation
:math:`\operatorname{softmax}(\bar z / \sqrt{1 + \pi v / 8})`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from geode.core.calibration import expected_calibration_error, negative_log_likelihood
from geode.core.validation import check_choice, check_int, check_positive, check_real, check_tensor

__all__ = ["VBLLClassifier", "expected_calibration_error", "negative_log_likelihood"]


class VBLLClassifier(nn.Module):
    r"""Variational Bayesian last layer for ``n_classes``-way classification (see the module docstring).

    Parameters
    ----------
    in_features : int
        Feature dimension :math:`D`.
    n_classes : int
        Number of classes :math:`K` (>= 2).
    parameterization : {"diagonal", "lowrank"}
        Covariance of each row :math:`S_k`: diagonal, or diagonal plus rank ``cov_rank``.
    cov_rank : int
        Rank of :math:`U_k` for ``"lowrank"``.
    prior_scale : float
        Prior variance :math:`\tau` of each weight.
    noise_prior : tuple of float
        Shape and scale :math:`(a, \beta)` of the inverse-gamma prior on each :math:`\sigma_k^2`.
    regularization_weight : float
        :math:`w` in the loss; the KL term is divided by the training-set size given to :meth:`loss`.
    init_log_std : float
        Initial :math:`\ell` (log standard deviation of the diagonal of :math:`S_k`).
    generator : torch.Generator, optional
        Random source of the initial means.

    Every method that takes ``features`` wants a finite, non-empty tensor of shape (n, in_features) (else a
    ``TypeError``/``ValueError`` naming ``features``).
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        *,
        parameterization: str = "diagonal",
        cov_rank: int = 2,
        prior_scale: float = 1.0,
        noise_prior: tuple[float, float] = (1.0, 1e-2),
        regularization_weight: float = 1.0,
        init_log_std: float = -3.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.in_features = check_int("in_features", in_features, low=1)
        self.n_classes = check_int("n_classes", n_classes, low=2)
        self.parameterization = check_choice("parameterization", parameterization, ("diagonal", "lowrank"))
        self.prior_scale = check_positive("prior_scale", prior_scale)
        if isinstance(noise_prior, (str, bytes)) or not hasattr(noise_prior, "__len__") or len(noise_prior) != 2:
            raise ValueError(f"noise_prior must be (shape, scale); got {noise_prior!r}")
        self.noise_shape = check_positive("noise_prior[0]", noise_prior[0])
        self.noise_scale = check_positive("noise_prior[1]", noise_prior[1])
        self.regularization_weight = check_real("regularization_weight", regularization_weight, low=0.0)
        init_log_std = check_real("init_log_std", init_log_std)
        d, k = self.in_features, self.n_classes
        bound = 1.0 / math.sqrt(d)
        self.mean = nn.Parameter(torch.empty(k, d).uniform_(-bound, bound, generator=generator))
        self.bias = nn.Parameter(torch.zeros(k))
        self.log_std = nn.Parameter(torch.full((k, d), init_log_std))
        if self.parameterization == "lowrank":
            self.cov_rank = check_int("cov_rank", cov_rank, low=1, high=d)
            self.cov_factor = nn.Parameter(torch.randn(k, d, self.cov_rank, generator=generator) * 1e-3)
        else:
            self.cov_rank = 0
            self.register_parameter("cov_factor", None)
        self.log_noise = nn.Parameter(torch.full((k,), 0.5 * math.log(self.noise_scale)))  # log σ_k

    def _check_features(self, features: torch.Tensor) -> torch.Tensor:
        check_tensor("features", features, finite=False, nonempty=False)
        if features.ndim != 2 or features.shape[1] != self.in_features:
            raise ValueError(f"features must have shape (n, {self.in_features}); got {tuple(features.shape)}")
        check_tensor("features", features)
        return features.to(self.mean.dtype)

    def logit_moments(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        r"""Mean :math:`\bar z` and variance :math:`v = \phi^\top S_k \phi + \sigma_k^2` of the logits, both (n, K)."""
        phi = self._check_features(features)
        mean = phi @ self.mean.T + self.bias
        var = (phi**2) @ torch.exp(2 * self.log_std).T
        if self.cov_factor is not None:
            var = var + torch.einsum("nd,kdr->nkr", phi, self.cov_factor).pow(2).sum(-1)
        return mean, var + torch.exp(2 * self.log_noise)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """The predictive mean logits :math:`\\bar z` (use :meth:`predictive` for probabilities)."""
        return self.logit_moments(features)[0]

    def kl_divergence(self) -> torch.Tensor:
        r""":math:`\sum_k \mathrm{KL}(\mathcal{N}(\bar w_k, S_k) \,\Vert\, \mathcal{N}(0, \tau I))`."""
        tau, d = self.prior_scale, self.in_features
        diag = torch.exp(2 * self.log_std)  # (K, D)
        trace = diag.sum(-1)
        logdet = 2 * self.log_std.sum(-1)
        if self.cov_factor is not None:
            u = self.cov_factor  # (K, D, R)
            trace = trace + u.pow(2).sum((-2, -1))
            cap = torch.eye(self.cov_rank, dtype=u.dtype) + u.mT @ (u / diag.unsqueeze(-1))  # I + Uᵀ D⁻¹ U
            logdet = logdet + torch.linalg.slogdet(cap)[1]  # matrix determinant lemma
        quad = self.mean.pow(2).sum(-1)
        return 0.5 * ((trace + quad) / tau - d + d * math.log(tau) - logdet).sum()

    def noise_log_prior(self) -> torch.Tensor:
        r""":math:`\sum_k \log \mathrm{IG}(\sigma_k^2; a, \beta)` up to a constant.

        Each term is :math:`-(a+1)\log\sigma_k^2 - \beta/\sigma_k^2`.
        """
        log_var = 2 * self.log_noise
        return (-(self.noise_shape + 1) * log_var - self.noise_scale * torch.exp(-log_var)).sum()

    def expected_log_likelihood_bound(self, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        r"""Per-example Jensen bound :math:`\bar z_y - \operatorname{LSE}_k(\bar z_k + v_k/2)`, shape (n,)."""
        mean, var = self.logit_moments(features)
        labels = _check_labels(labels, len(mean), self.n_classes)
        return mean.gather(1, labels[:, None]).squeeze(1) - torch.logsumexp(mean + 0.5 * var, dim=1)

    def loss(self, features: torch.Tensor, labels: torch.Tensor, n_train: int) -> torch.Tensor:
        r"""The negative ELBO per example (the training objective; see the module docstring).

        Parameters
        ----------
        features : shape (n, D)
        labels : shape (n,), ints in [0, K)
        n_train : int
            Size of the training set :math:`N` (scales the KL term).
        """
        n_train = check_int("n_train", n_train, low=1)
        nll = -self.expected_log_likelihood_bound(features, labels).mean()
        reg = self.kl_divergence() - self.noise_log_prior()
        return nll + self.regularization_weight * reg / n_train

    def predictive(
        self,
        features: torch.Tensor,
        *,
        method: str = "mc",
        n_samples: int = 256,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        r"""Predictive class probabilities :math:`\mathbb{E}[\operatorname{softmax}(z)]`, shape (n, K), rows sum to 1.

        Parameters
        ----------
        features : shape (n, D)
        method : {"mc", "probit"}
            Monte Carlo over the logit Gaussians (``n_samples`` draws, no extra backbone pass), or
            the probit approximation :math:`\operatorname{softmax}(\bar z / \sqrt{1 + \pi v / 8})`.
        n_samples : int
        generator : torch.Generator, optional
            Makes the Monte Carlo estimate deterministic.
        """
        check_choice("method", method, ("mc", "probit"))
        mean, var = self.logit_moments(features)
        if method == "probit":
            return torch.softmax(mean / torch.sqrt(1.0 + math.pi * var / 8.0), dim=-1)
        n_samples = check_int("n_samples", n_samples, low=1)
        eps = torch.randn((n_samples, *mean.shape), generator=generator, dtype=mean.dtype, device=mean.device)
        return torch.softmax(mean + var.sqrt() * eps, dim=-1).mean(0)


def _check_labels(labels: Any, n: int, n_classes: int) -> torch.Tensor:
    labels = torch.as_tensor(labels)
    if labels.shape != (n,) or labels.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise ValueError(f"labels must be integers of shape ({n},); got {labels.dtype} {tuple(labels.shape)}")
    if n and (int(labels.min()) < 0 or int(labels.max()) >= n_classes):
        raise ValueError(f"labels must lie in [0, {n_classes}); got range [{int(labels.min())}, {int(labels.max())}]")
    return labels.long()
