r"""SD-LoRA: a training-only heterogeneous graph teacher distilled into a CLIP-LoRA student.

Student (kept at inference): CLIP with LoRA on the ``q_proj``/``k_proj``/``v_proj`` layers of both
encoders (CLIP-LoRA's placement), classifying by :math:`s \cos(f, t_c)` plus a Tip-Adapter cache

.. math::

    \ell(x) = s\, f T^\top + \alpha \exp\!\big(-\beta (1 - f F^\top)\big) L,

with :math:`f` the student's image embedding, :math:`T` its class-caption embeddings, :math:`F` the
embeddings of the support images and :math:`L` their one-hot labels.

Teacher (training only): a graph over the student's final-layer tokens of one image, nodes of three
types (global CLS, patches, class-caption embeddings), edges of four relations (patch-patch: 4-neighbour
grid adjacency plus the ``knn`` most cosine-similar patches; global-local: CLS <-> every patch;
visual-text: every visual node <-> every text node; self loops). One layer of typed graph attention
(per-node-type Q/K/V projections, a learned bias per relation, masked to the edges; residual + LayerNorm +
ReLU as the authors' ``rgtmodel.py``) gives node states; the graph feature is
:math:`g = h_{\mathrm{CLS}} + \mathrm{LN}(\sum_{\mathrm{top}\text{-}k} h_{\mathrm{patch}})` (patches ranked by a
learned saliency score), teacher logits :math:`s \cos(W g, W_t h_{\mathrm{text}})`, and a predictor MLP
:math:`q = P(g)` for Prototype Predictive Alignment. The loss is

.. math::

    \mathcal L = \mathrm{CE}(\ell_{\mathrm{student}}, y) + \lambda_1 \mathrm{CE}(\ell_{\mathrm{teacher}}, y)
    + \lambda_2 \mathrm{CE}\big(s \cos(q, p_c), y\big),

where :math:`p_c` is the normalised mean of the (detached) student embeddings of class :math:`c`'s
support images. The teacher's losses reach the shared LoRA weights through the tokens it reads
("implicit distillation"). With :math:`\lambda_1 = \lambda_2 = 0` the model *is* CLIP-LoRA.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from geode.adapters.lora import LoRALinear, inject_adapters, merge_adapters, unmerge_adapters
from geode.core.validation import check_int, check_positive, check_real, check_tensor

__all__ = ["GraphTeacher", "SDLoRA", "cache_logits", "fit"]

_TYPES = ("global", "patch", "text")


def cache_logits(
    f: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, *, alpha: float, beta: float
) -> torch.Tensor:
    r"""Tip-Adapter's training-free cache term α exp(−β(1 − f Fᵀ)) L.

    Parameters
    ----------
    f : (B, e) normalised query embeddings.
    keys : (M, e) normalised support embeddings :math:`F`.
    values : (M, C) one-hot support labels :math:`L`.
    alpha, beta : float
        Weight and sharpness (both finite and ``>= 0``).

    The three tensors must be finite and non-empty (else a ``TypeError``/``ValueError`` naming the argument).
    """
    check_tensor("f", f, ndim=2)
    check_tensor("keys", keys, shape=(None, f.shape[1]))
    check_tensor("values", values, ndim=2)
    if keys.shape[0] != values.shape[0]:
        raise ValueError(f"keys and values must have as many rows; got {keys.shape[0]} and {values.shape[0]}")
    alpha = check_real("alpha", alpha, low=0.0)
    beta = check_real("beta", beta, low=0.0)
    return _cache_logits(f, keys, values, alpha, beta)


def _cache_logits(
    f: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, alpha: float, beta: float
) -> torch.Tensor:
    return float(alpha) * torch.exp(-float(beta) * (1.0 - f @ keys.T)) @ values


def _check_labels(labels: torch.Tensor, n: int, n_classes: int | None = None) -> None:
    check_tensor("labels", labels, ndim=1, finite=False, nonempty=False)
    if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
        raise TypeError(f"labels must be an integer tensor; got {labels.dtype}")
    if labels.shape[0] != n:
        raise ValueError(f"labels must have one entry per row of images; got {labels.shape[0]} labels for {n} images")
    if n and n_classes is not None and (int(labels.min()) < 0 or int(labels.max()) >= n_classes):
        raise ValueError(f"labels must lie in [0, {n_classes}); got range [{int(labels.min())}, {int(labels.max())}]")


class GraphTeacher(nn.Module):
    r"""The heterogeneous graph teacher over one image's tokens and the class captions (training only).

    Parameters
    ----------
    d : int
        Width of the student's tokens.
    embed_dim : int
        Dimension of the shared image-text space (text nodes enter with this width).
    grid : int
        The patches form a ``grid x grid`` raster (row-major after the CLS token).
    hidden : int
        Width of the graph layer.
    knn : int
        Extra patch-patch edges per patch to its most cosine-similar patches (0: grid adjacency only).
    top_k : float
        Fraction of patches pooled by saliency, in (0, 1].

    :meth:`forward` wants finite, non-empty ``tokens`` (B, 1 + grid², d) and ``text`` (C, embed_dim).
    """

    def __init__(self, d: int, embed_dim: int, grid: int, *, hidden: int = 32, knn: int = 3, top_k: float = 0.5):
        super().__init__()
        self.grid = check_int("grid", grid, low=1)
        self.knn = check_int("knn", knn, low=0, high=grid * grid - 1)
        self.top_k = check_real("top_k", top_k, low=0.0, high=1.0)
        if self.top_k <= 0:
            raise ValueError(f"top_k must be in (0, 1]; got {top_k}")
        h = check_int("hidden", hidden, low=1)
        self.hidden = h
        self.d = check_int("d", d, low=1)
        self.embed_dim = check_int("embed_dim", embed_dim, low=1)
        self.inp = nn.ModuleDict(
            {"global": nn.Linear(d, h), "patch": nn.Linear(d, h), "text": nn.Linear(embed_dim, h)}
        )
        self.qkv = nn.ModuleDict({t: nn.Linear(h, 3 * h) for t in _TYPES})
        self.rel_bias = nn.Parameter(torch.zeros(4))  # patch-patch, global-local, visual-text, self
        self.norm = nn.ModuleDict({t: nn.LayerNorm(h) for t in _TYPES})
        self.saliency = nn.Linear(h, 1)
        self.out_v = nn.Linear(h, embed_dim, bias=False)
        self.out_t = nn.Linear(h, embed_dim, bias=False)
        self.predictor = nn.Sequential(nn.Linear(h, h), nn.LayerNorm(h), nn.GELU(), nn.Linear(h, embed_dim))
        g = self.grid
        idx = torch.arange(g * g)
        r, c = idx // g, idx % g
        self.register_buffer(
            "grid_adj", ((r[:, None] - r[None]).abs() + (c[:, None] - c[None]).abs() == 1), persistent=False
        )

    def relations(self, patches: torch.Tensor, n_text: int) -> torch.Tensor:
        """Relation id of every edge (-1: no edge), shape (B, N, N) with N = 1 + P + n_text."""
        b, p, _ = patches.shape
        n = 1 + p + n_text
        rel = torch.full((b, n, n), -1, dtype=torch.long, device=patches.device)
        pp = self.grid_adj.unsqueeze(0).expand(b, -1, -1).clone()
        if self.knn:
            z = nn.functional.normalize(patches.detach(), dim=-1)
            sim = z @ z.transpose(1, 2) - 2.0 * torch.eye(p, device=z.device)
            nb = sim.topk(self.knn, dim=-1).indices
            pp.scatter_(2, nb, True)
            pp = pp | pp.transpose(1, 2)
        rel[:, 1 : 1 + p, 1 : 1 + p] = torch.where(pp, 0, -1)
        rel[:, 0, 1 : 1 + p] = 1
        rel[:, 1 : 1 + p, 0] = 1
        rel[:, : 1 + p, 1 + p :] = 2
        rel[:, 1 + p :, : 1 + p] = 2
        eye = torch.eye(n, dtype=torch.bool, device=patches.device).expand(b, -1, -1)
        return torch.where(eye, torch.full_like(rel, 3), rel)

    def forward(self, tokens: torch.Tensor, text: torch.Tensor) -> dict[str, torch.Tensor]:
        """Graph feature, teacher image/text embeddings and prototype prediction.

        Parameters
        ----------
        tokens : (B, 1 + P, d) student tokens (CLS first).
        text : (C, embed_dim) class-caption embeddings.
        """
        check_tensor("tokens", tokens, ndim=3, finite=False, nonempty=False)
        b, n_tok, _ = tokens.shape
        p = n_tok - 1
        if p != self.grid**2:
            raise ValueError(f"tokens must hold 1 + {self.grid**2} tokens; got {n_tok}")
        if tokens.shape[2] != self.d:
            raise ValueError(f"tokens must have width d = {self.d}; got shape {tuple(tokens.shape)}")
        check_tensor("tokens", tokens)
        check_tensor("text", text, shape=(None, self.embed_dim))
        c = text.shape[0]
        parts = {
            "global": self.inp["global"](tokens[:, :1]),
            "patch": self.inp["patch"](tokens[:, 1:]),
            "text": self.inp["text"](text).unsqueeze(0).expand(b, -1, -1),
        }
        qkv = torch.cat([self.qkv[t](parts[t]) for t in _TYPES], dim=1)
        q, k, v = qkv.chunk(3, dim=-1)
        rel = self.relations(tokens[:, 1:], c)
        bias = torch.where(rel >= 0, self.rel_bias[rel.clamp(min=0)], torch.full_like(rel, -1e9, dtype=q.dtype))
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(self.hidden) + bias, dim=-1)
        msg = att @ v
        x = torch.cat([parts[t] for t in _TYPES], dim=1)
        sl = {"global": slice(0, 1), "patch": slice(1, 1 + p), "text": slice(1 + p, 1 + p + c)}
        h = {t: x[:, sl[t]] + torch.relu(self.norm[t](msg[:, sl[t]])) for t in _TYPES}
        k_top = max(1, int(p * self.top_k))
        score = self.saliency(h["patch"]).squeeze(-1)
        top = score.topk(k_top, dim=1).indices
        sel = torch.gather(h["patch"], 1, top.unsqueeze(-1).expand(-1, -1, self.hidden))
        # the saliency score gates the pooled patches, so the scorer gets a gradient (authors: plain top-k sum)
        gate = torch.sigmoid(torch.gather(score, 1, top)).unsqueeze(-1)
        g = h["global"][:, 0] + nn.functional.layer_norm((gate * sel).sum(1), (self.hidden,))
        return {
            "graph": g,
            "image": nn.functional.normalize(self.out_v(g), dim=-1),
            "text": nn.functional.normalize(self.out_t(h["text"][0]), dim=-1),
            "prototype_prediction": nn.functional.normalize(self.predictor(g), dim=-1),
        }


class SDLoRA(nn.Module):
    r"""SD-LoRA around a CLIP-like model: LoRA student, training-only graph teacher, cache classifier.

    Parameters
    ----------
    clip : nn.Module
        A model with ``image_tokens(images)``, ``encode_image(images, tokens=None)``,
        ``encode_text(captions)``, ``logit_scale`` and attributes ``d``, ``grid`` (e.g.
        :class:`~geode.adapters.sd_lora.TinyCLIP`). It is deep-copied; the copy's weights are frozen.
    r : int
        LoRA rank (CLIP-LoRA: 2).
    alpha : float, optional
        LoRA :math:`\alpha` (default ``r``, scaling 1).
    targets : sequence of str
        Linear layers that get LoRA (default q/k/v of both encoders, as CLIP-LoRA).
    lambda_distill, lambda_ppa : float
        :math:`\lambda_1` (teacher cross-entropy) and :math:`\lambda_2` (PPA); both 0 gives CLIP-LoRA.
    hidden, knn, top_k : teacher settings (:class:`GraphTeacher`).
    generator : torch.Generator, optional
        Random source of the LoRA and teacher initialisation.

    Notes
    -----
    :meth:`predict` never calls the teacher; its parameters can be dropped (``drop_teacher``) after
    training with no change to predictions. ``images`` must be finite and non-empty, ``labels`` integers in
    ``[0, C)`` (one per image), ``captions`` the clip's word-id tensor (else a ``TypeError``/``ValueError`` naming
    the argument). ``merge``/``unmerge`` fold the LoRA updates into the frozen
    weights and back; :func:`geode.adapters.save_peft_lora` exports ``self.student`` in PEFT's format.
    """

    def __init__(
        self,
        clip: nn.Module,
        r: int = 2,
        alpha: float | None = None,
        *,
        targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj"),
        lambda_distill: float = 1.0,
        lambda_ppa: float = 1.0,
        hidden: int = 32,
        knn: int = 3,
        top_k: float = 0.5,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        for name in ("image_tokens", "encode_image", "encode_text"):
            if not callable(getattr(clip, name, None)):
                raise TypeError(f"clip must provide {name}(); got {type(clip).__name__}")
        self.lambda_distill = check_real("lambda_distill", lambda_distill, low=0.0)
        self.lambda_ppa = check_real("lambda_ppa", lambda_ppa, low=0.0)
        self.student = copy.deepcopy(clip)
        for prm in self.student.parameters():
            prm.requires_grad_(False)
        self.adapted = inject_adapters(
            self.student, list(targets), lambda lin: LoRALinear(lin, r, alpha, generator=generator)
        )
        embed_dim = self.student.encode_text(torch.zeros(1, 1, dtype=torch.long)).shape[-1]
        if generator is not None:
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
        self.teacher: GraphTeacher | None = GraphTeacher(
            self.student.d, embed_dim, self.student.grid, hidden=hidden, knn=knn, top_k=top_k
        )
        self.cache: tuple[torch.Tensor, torch.Tensor] | None = None

    @property
    def scale(self) -> torch.Tensor:
        return self.student.logit_scale.exp()

    def loss(
        self,
        images: torch.Tensor,
        labels: torch.Tensor,
        captions: torch.Tensor,
        prototypes: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """Training losses (``total``, ``student``, ``distill``, ``ppa``) on a batch.

        ``prototypes`` (C, e), normalised, are required when ``lambda_ppa > 0``.
        """
        check_tensor("images", images)
        check_tensor("captions", captions, finite=False)
        _check_labels(labels, len(images), captions.shape[0])
        tokens = self.student.image_tokens(images)
        f = self.student.encode_image(images, tokens=tokens)
        t = self.student.encode_text(captions)
        if prototypes is not None:
            check_tensor("prototypes", prototypes, shape=tuple(t.shape))
        ce = nn.functional.cross_entropy(self.scale * f @ t.T, labels)
        out = {"student": ce, "distill": ce.new_zeros(()), "ppa": ce.new_zeros(())}
        if self.lambda_distill > 0 or self.lambda_ppa > 0:
            if self.teacher is None:
                raise RuntimeError("the teacher was dropped; SD-LoRA cannot be trained further")
            tg = self.teacher(tokens, t)
            out["distill"] = nn.functional.cross_entropy(self.scale * tg["image"] @ tg["text"].T, labels)
            if self.lambda_ppa > 0:
                if prototypes is None:
                    raise ValueError("prototypes are required when lambda_ppa > 0")
                out["ppa"] = nn.functional.cross_entropy(
                    self.scale * tg["prototype_prediction"] @ prototypes.T, labels
                )
        out["total"] = ce + self.lambda_distill * out["distill"] + self.lambda_ppa * out["ppa"]
        return out

    @torch.no_grad()
    def prototypes(self, images: torch.Tensor, labels: torch.Tensor, n_classes: int) -> torch.Tensor:
        """Normalised class means of the student's (detached) embeddings of the support images."""
        n_classes = check_int("n_classes", n_classes, low=1)
        check_tensor("images", images)
        _check_labels(labels, len(images), n_classes)
        f = self.student.encode_image(images)
        counts = torch.bincount(labels, minlength=n_classes)
        if (counts == 0).any():
            raise ValueError(
                f"every class needs at least one support image; empty: {torch.nonzero(counts == 0).flatten().tolist()}"
            )
        s = torch.zeros(n_classes, f.shape[1]).index_add_(0, labels, f)
        return nn.functional.normalize(s / counts[:, None], dim=-1)

    @torch.no_grad()
    def build_cache(self, images: torch.Tensor, labels: torch.Tensor, n_classes: int) -> None:
        """Store the support set's student embeddings and one-hot labels (the Tip-Adapter cache)."""
        if isinstance(images, torch.Tensor) and len(images) == 0:
            raise ValueError("the support set is empty")
        n_classes = check_int("n_classes", n_classes, low=1)
        check_tensor("images", images)
        _check_labels(labels, len(images), n_classes)
        self.cache = (self.student.encode_image(images), nn.functional.one_hot(labels, n_classes).float())

    @torch.no_grad()
    def predict(
        self, images: torch.Tensor, captions: torch.Tensor, *, alpha: float = 0.0, beta: float = 1.0
    ) -> torch.Tensor:
        """Inference logits: one student forward plus the cache term (the teacher is not used).

        ``alpha`` and ``beta`` (finite, >= 0) are the cache's weight and sharpness (:func:`cache_logits`).
        """
        alpha = check_real("alpha", alpha, low=0.0)
        beta = check_real("beta", beta, low=0.0)
        check_tensor("images", images)
        f = self.student.encode_image(images)
        logits = self.scale * f @ self.student.encode_text(captions).T
        if alpha:
            if self.cache is None:
                raise RuntimeError("alpha > 0 needs a cache; call build_cache first")
            logits = logits + _cache_logits(f, *self.cache, alpha=alpha, beta=beta)
        return logits

    def drop_teacher(self) -> None:
        """Discard the teacher (inference needs only the student and the cache)."""
        self.teacher = None

    def merge(self) -> None:
        merge_adapters(self.student)

    def unmerge(self) -> None:
        unmerge_adapters(self.student)

    def trainable(self) -> list[nn.Parameter]:
        """LoRA parameters, then (when a teacher loss is on) the teacher's."""
        ps = [p for n, p in self.student.named_parameters() if "lora_" in n]
        if self.teacher is not None and (self.lambda_distill > 0 or self.lambda_ppa > 0):
            ps += list(self.teacher.parameters())
        return ps

    def forward(self, images: torch.Tensor, captions: torch.Tensor) -> torch.Tensor:
        """Student logits with gradients (no cache, no teacher)."""
        check_tensor("images", images)
        return self.scale * self.student.encode_image(images) @ self.student.encode_text(captions).T


def fit(
    model: SDLoRA,
    images: torch.Tensor,
    labels: torch.Tensor,
    captions: torch.Tensor,
    *,
    steps: int,
    lr: float,
    batch_size: int = 32,
    proto_every: int = 10,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` on a support set (AdamW, cosine decay); returns the per-step total losses.

    ``images`` finite and non-empty, ``labels`` one integer in ``[0, C)`` per image (C = ``len(captions)``),
    ``steps`` >= 0, ``lr`` > 0, ``batch_size`` and ``proto_every`` >= 1.
    """
    if not isinstance(model, SDLoRA):
        raise TypeError(f"model must be an SDLoRA; got {type(model).__name__}")
    check_tensor("images", images)
    check_tensor("captions", captions, finite=False)
    _check_labels(labels, len(images), captions.shape[0])
    check_int("steps", steps, low=0)
    check_positive("lr", lr)
    check_int("batch_size", batch_size, low=1)
    check_int("proto_every", proto_every, low=1)
    n_classes = captions.shape[0]
    gen = torch.Generator().manual_seed(seed)
    params = model.trainable()
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(1, steps))
    protos = None
    losses: list[float] = []
    bs = min(batch_size, len(images))
    for step in range(check_int("steps", steps, low=0)):
        if model.lambda_ppa > 0 and step % proto_every == 0:
            protos = model.prototypes(images, labels, n_classes)
        idx = torch.randperm(len(images), generator=gen)[:bs]
        loss = model.loss(images[idx], labels[idx], captions, protos)["total"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return losses
