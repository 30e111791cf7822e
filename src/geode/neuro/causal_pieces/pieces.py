"""Causal paths and the number of causal pieces of a feedforward single-spike SNN.

For one input, every spiking neuron :math:`j` of layer :math:`l` has a causal set :math:`C^l_j` (the
inputs that caused its spike, :func:`geode.neuro.lif.nlif_spike_times`). The *causal path* is the
subnetwork that causes the output spikes: starting from the spiking output neurons, keep the causal
sets of the active neurons and mark their members as active in the layer below,

.. math::

    a^L = \\{j : t^L_j < \\infty\\}, \\qquad
    a^{l-1} = \\bigcup_{j \\in a^l} C^l_j, \\qquad
    P(x, \\mathbf{w}) = \\big( (C^l_j)_{j \\in a^l} \\big)_{l = 1..L}.

A *causal piece* is a maximal region of input × parameter space on which :math:`P` is constant; on it
the output spike times are compositions of log-sum-exp forms, hence locally Lipschitz. The
data-informed count is the number of distinct paths realised on a finite set of inputs (and,
optionally, of parameter draws around the current weights), a lower bound on the number of pieces
the set touches.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from geode.core.random import torch_generator
from geode.core.validation import check_int, check_real
from geode.neuro.lif import NLIFLayer, NLIFNetwork

__all__ = ["causal_path_masks", "count_causal_pieces"]


def _as_layers(model: Any) -> list[NLIFLayer]:
    """The NLIF layers of ``model`` (a layer, an :class:`NLIFNetwork`, or a sequence of layers)."""
    if isinstance(model, NLIFLayer):
        layers = [model]
    elif isinstance(model, NLIFNetwork):
        layers = list(model.layers)
    elif isinstance(model, (nn.Sequential, nn.ModuleList, list, tuple)):
        layers = list(model)
    else:
        raise TypeError(
            f"model must be an NLIFLayer, an NLIFNetwork or a sequence of NLIFLayers; got {type(model).__name__}"
        )
    if not layers:
        raise ValueError("model must hold at least one NLIFLayer")
    for i, layer in enumerate(layers):
        if not isinstance(layer, NLIFLayer):
            raise TypeError(f"model layer {i} must be an NLIFLayer; got {type(layer).__name__}")
    for i in range(len(layers) - 1):
        if layers[i].out_features != layers[i + 1].in_features:
            raise ValueError(
                f"layer shape mismatch: layer {i} has out_features={layers[i].out_features} but layer {i + 1} "
                f"has in_features={layers[i + 1].in_features}"
            )
    return layers


def causal_path_masks(
    model: Any, t_in: torch.Tensor, *, restrict_to_output: bool = True
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Output spike times and the causal path of every input, as one boolean mask per layer.

    Parameters
    ----------
    model : NLIFLayer, NLIFNetwork or sequence of NLIFLayer
    t_in : torch.Tensor, shape (batch, n_in)
        Input spike times (``inf`` = no spike; NaN is rejected). An empty batch gives empty outputs.
    restrict_to_output : bool
        Keep only the causal sets of neurons upstream of a spiking output neuron (the causal path,
        default). ``False`` keeps every neuron's causal set (the full causal state of the network).

    Returns
    -------
    t_out : torch.Tensor, shape (batch, n_out)
    masks : list of torch.BoolTensor, shapes (batch, n_in_l, n_out_l)
        ``masks[l][b, i, j]``: input ``i`` of layer ``l`` is in the causal set of its neuron ``j``,
        and (with ``restrict_to_output``) ``j`` lies on the causal path of sample ``b``.
    """
    layers = _as_layers(model)
    if not isinstance(t_in, torch.Tensor):
        raise TypeError(f"t_in must be a torch.Tensor of spike times; got {type(t_in).__name__}")
    masks = []
    t = t_in
    for layer in layers:
        t, m = layer(t)
        masks.append(m)
    if restrict_to_output:
        active = torch.isfinite(t)  # spiking output neurons
        for l in range(len(masks) - 1, -1, -1):
            masks[l] = masks[l] & active[:, None, :]
            active = masks[l].any(dim=2)
    return t, masks


def _codes(masks: Sequence[torch.Tensor]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Bit-packed path codes (one row per input), for the whole path and for each layer."""
    per_layer = [np.packbits(m.reshape(m.shape[0], -1).cpu().numpy(), axis=1) for m in masks]
    return np.concatenate(per_layer, axis=1), per_layer


def _n_unique(rows: np.ndarray) -> int:
    return int(np.unique(rows, axis=0).shape[0]) if rows.shape[0] else 0


def count_causal_pieces(
    model: Any,
    X: torch.Tensor,
    *,
    restrict_to_output: bool = True,
    param_samples: int = 0,
    param_scale: float = 0.0,
    seed: int = 0,
    batch_size: int = 4096,
    log: bool = False,
) -> int | tuple[int, dict[str, Any]]:
    """Number of distinct causal pieces (causal paths) of a single-spike SNN realised on inputs ``X``.

    Parameters
    ----------
    model : NLIFLayer, NLIFNetwork or sequence of NLIFLayer
        The network; its weights are not modified.
    X : torch.Tensor, shape (n, n_in)
        Input spike times (``inf`` = no spike; NaN is rejected).
    restrict_to_output : bool
        Count causal paths (default): only the causal sets of neurons that lead to a spiking output
        neuron. ``False`` counts distinct full causal states (every neuron's causal set).
    param_samples : int
        Also count the pieces met over ``param_samples`` parameter draws
        :math:`\\mathbf{w} + \\sigma \\boldsymbol{\\varepsilon}`, :math:`\\varepsilon \\sim \\mathcal{N}(0, I)`
        (a parameter neighbourhood), in addition to the current weights; 0 (default) uses the current
        weights only.
    param_scale : float
        :math:`\\sigma` of the parameter draws (>= 0).
    seed : int
        Seed of the parameter draws.
    batch_size : int
        Inputs per forward pass.
    log : bool
        Also return diagnostics (POT-style ``log=True``).

    Returns
    -------
    n_pieces : int
        Distinct causal paths over all (input, parameter draw) pairs; 1 for a network that never
        spikes (the empty path is one piece).
    log : dict, only with ``log=True``
        ``per_layer`` (distinct restricted masks of each layer, current weights), ``piece_ids`` (int
        array of shape (n,): the piece of each input under the current weights; equal ids mean the
        same causal path), ``silent_fraction`` (inputs with no output spike) and
        ``n_inputs``.

    Examples
    --------
    >>> import torch
    >>> from geode.neuro.lif import NLIFLayer
    >>> layer = NLIFLayer(2, 1, tau_s=1.0, theta=1.0)
    >>> with torch.no_grad():
    ...     _ = layer.weight.fill_(1.5)
    >>> grid = torch.linspace(0, 3, 31)
    >>> X = torch.cartesian_prod(grid, grid)  # both input times on a grid
    >>> count_causal_pieces(layer, X)  # {0}, {1} or {0, 1} causes the spike
    3
    """
    layers = _as_layers(model)
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"X must be a torch.Tensor of input spike times; got {type(X).__name__}")
    if X.ndim != 2 or X.shape[1] != layers[0].in_features:
        raise ValueError(f"X must have shape (n, {layers[0].in_features}); got {tuple(X.shape)}")
    if X.shape[0] == 0:
        raise ValueError("X must hold at least one input")
    if torch.isnan(X).any():
        raise ValueError("X must not contain NaN spike times (use inf for 'no spike')")
    param_samples = check_int("param_samples", param_samples, low=0)
    param_scale = check_real("param_scale", param_scale, low=0.0)
    batch_size = check_int("batch_size", batch_size, low=1)
    if param_samples > 0 and param_scale == 0.0:
        raise ValueError("param_scale must be > 0 when param_samples > 0")

    def paths(ls: list[NLIFLayer]) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
        codes, per_layer, silent = [], [], []
        with torch.no_grad():
            for s in range(0, X.shape[0], batch_size):
                t_out, masks = causal_path_masks(ls, X[s : s + batch_size], restrict_to_output=restrict_to_output)
                c, pl = _codes(masks)
                codes.append(c)
                per_layer.append(pl)
                silent.append((~torch.isfinite(t_out)).all(dim=1).numpy())
        layer_codes = [np.concatenate([pl[l] for pl in per_layer]) for l in range(len(ls))]
        return np.concatenate(codes), layer_codes, np.concatenate(silent)

    codes, layer_codes, silent = paths(layers)
    all_codes = [codes]
    if param_samples:
        gen = torch_generator(seed)
        for _ in range(param_samples):
            perturbed = copy.deepcopy(layers)
            with torch.no_grad():
                for layer in perturbed:
                    noise = torch.randn(layer.weight.shape, generator=gen, dtype=layer.weight.dtype)
                    layer.weight.add_(param_scale * noise)
            all_codes.append(paths(perturbed)[0])
    n_pieces = _n_unique(np.concatenate(all_codes))
    if not log:
        return n_pieces
    _, piece_ids = np.unique(codes, axis=0, return_inverse=True)
    info = {
        "per_layer": [_n_unique(c) for c in layer_codes],
        "piece_ids": piece_ids.reshape(-1).astype(np.int64),
        "silent_fraction": float(silent.mean()),
        "n_inputs": int(X.shape[0]),
    }
    return n_pieces, info
