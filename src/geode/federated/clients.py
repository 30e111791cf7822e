r"""Clients that train torch models with mini-batch SGD: one at a time, or a whole population at once.

:class:`TorchClient` is a Flower-``NumPyClient``-shaped client for any ``torch.nn.Module``.
:class:`BatchedTorchClients` holds a population of clients that share one MLP architecture
(``nn.Sequential`` of ``nn.Linear`` layers and parameter-free activations) and trains all the clients
of a round together, with their weights stacked and batched matrix products: the same SGD steps,
the same shuffling and the same numbers as :class:`TorchClient` (up to float rounding; a test checks
it), 5-20x faster on small models where per-call overhead dominates.

Both implement local SGD on client :math:`k`'s data from the received global model :math:`\theta_t`:

.. math::

    \theta \leftarrow \theta - \eta \Big( \nabla \frac{1}{|B|}\sum_{i \in B} \ell(f_\theta(x_i), y_i)
    + \lambda \theta + \mu (\theta - \theta_t) \Big)

for shuffled mini-batches :math:`B`, with weight decay :math:`\lambda` and FedProx's proximal weight
:math:`\mu` (config ``"proximal-mu"``, 0 by default). Both report ``"train_loss"``, the loss of the
received model on the client's training data (q-FFL's :math:`F_k(\theta_t)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from geode.core.validation import check_array, check_int, check_positive, check_real
from geode.federated.strategies import NDArrays

__all__ = ["BatchedTorchClients", "TorchClient"]


def _check_xy(x: Any, y: Any, xname: str = "x", yname: str = "y") -> tuple[np.ndarray, np.ndarray]:
    xa = check_array(xname, x, dtype=np.float32, min_rows=1)
    ya = check_array(yname, y, ndim=1, dtype=np.int64)
    if xa.shape[0] != ya.shape[0]:
        raise ValueError(f"{xname} and {yname} must have the same number of rows; got {xa.shape[0]} and {ya.shape[0]}")
    if np.any(ya < 0):
        raise ValueError(f"{yname} must hold class indices >= 0")
    return xa, ya


def _fit_options(config: dict[str, Any], lr: float, epochs: int, bs: int) -> tuple[float, int, int, float]:
    lr = check_positive("config['lr']", config.get("lr", lr))
    epochs = check_int("config['local-epochs']", config.get("local-epochs", epochs), low=1)
    bs = check_int("config['batch-size']", config.get("batch-size", bs), low=1)
    mu = check_real("config['proximal-mu']", config.get("proximal-mu", 0.0), low=0.0)
    return lr, epochs, bs, mu


class TorchClient:
    r"""A client that trains a ``torch.nn.Module`` with mini-batch SGD on its own data.

    ``fit`` loads the received parameters (in ``state_dict`` order), records the loss of that global
    model on its training data (``"train_loss"``), runs ``epochs`` passes of SGD over shuffled
    mini-batches (the module docstring's update) and returns the new ``state_dict`` arrays. Config
    keys ``"lr"``, ``"local-epochs"``, ``"batch-size"`` and ``"proximal-mu"`` override the defaults;
    ``"seed"`` seeds the shuffling.

    Parameters
    ----------
    model : torch.nn.Module
        A template network; clients may share one (its weights are overwritten at every call).
    x, y : array_like
        Training inputs (float) and class labels (int), the same number of rows.
    x_test, y_test : array_like, optional
        Local evaluation data (default: the training data).
    lr : float
        SGD step size :math:`\eta`.
    epochs : int
        Local epochs per round.
    batch_size : int
        Mini-batch size.
    weight_decay : float
        L2 penalty :math:`\lambda`.
    """

    def __init__(
        self,
        model: Any,
        x: Any,
        y: Any,
        x_test: Any = None,
        y_test: Any = None,
        *,
        lr: float = 0.01,
        epochs: int = 1,
        batch_size: int = 20,
        weight_decay: float = 0.0,
    ) -> None:
        import torch

        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
        self.model = model
        xa, ya = _check_xy(x, y)
        self.x, self.y = torch.from_numpy(xa), torch.from_numpy(ya)
        if (x_test is None) != (y_test is None):
            raise ValueError("give both x_test and y_test, or neither")
        if x_test is None:
            self.x_test, self.y_test = self.x, self.y
        else:
            xt, yt = _check_xy(x_test, y_test, "x_test", "y_test")
            self.x_test, self.y_test = torch.from_numpy(xt), torch.from_numpy(yt)
        self.lr = check_positive("lr", lr)
        self.epochs = check_int("epochs", epochs, low=1)
        self.batch_size = check_int("batch_size", batch_size, low=1)
        self.weight_decay = check_real("weight_decay", weight_decay, low=0.0)

    @property
    def num_examples(self) -> int:
        """Size of the local training set."""
        return int(self.y.shape[0])

    def _load(self, parameters: NDArrays) -> None:
        import torch

        sd = self.model.state_dict()
        if len(parameters) != len(sd):
            raise ValueError(f"parameters has {len(parameters)} arrays; the model's state_dict has {len(sd)}")
        new = {}
        for j, ((k, v), a) in enumerate(zip(sd.items(), parameters)):
            t = torch.as_tensor(np.asarray(a))
            if tuple(t.shape) != tuple(v.shape):
                raise ValueError(
                    f"parameters[{j}] ({k!r}) has shape {tuple(t.shape)}; the model expects {tuple(v.shape)}"
                )
            if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                raise ValueError(f"parameters[{j}] ({k!r}) contains NaN or inf")
            new[k] = t.to(v.dtype)
        self.model.load_state_dict(new)

    def get_parameters(self) -> NDArrays:
        """The model's ``state_dict`` as numpy arrays (copies)."""
        return [v.detach().cpu().numpy().copy() for v in self.model.state_dict().values()]

    def fit(self, parameters: NDArrays, config: dict[str, Any]) -> tuple[NDArrays, int, dict[str, Any]]:
        """Local SGD from ``parameters``; returns (new parameters, number of examples, ``{"train_loss"}``)."""
        import torch
        import torch.nn.functional as F

        self._load(parameters)
        lr, epochs, bs, mu = _fit_options(config, self.lr, self.epochs, self.batch_size)
        gen = torch.Generator().manual_seed(int(config.get("seed", 0)))
        model = self.model
        model.train()
        with torch.no_grad():
            start_loss = float(F.cross_entropy(model(self.x), self.y))
        params = [p for p in model.parameters() if p.requires_grad]
        anchor = [p.detach().clone() for p in params] if mu > 0 else None
        opt = torch.optim.SGD(params, lr=lr, weight_decay=self.weight_decay)
        n = self.num_examples
        for _ in range(epochs):
            order = torch.randperm(n, generator=gen)
            for s in range(0, n, bs):
                idx = order[s : s + bs]
                loss = F.cross_entropy(model(self.x[idx]), self.y[idx])
                if anchor is not None:
                    loss = loss + 0.5 * mu * sum(((p - a) ** 2).sum() for p, a in zip(params, anchor))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        return self.get_parameters(), n, {"train_loss": start_loss}

    def evaluate(self, parameters: NDArrays, config: dict[str, Any]) -> tuple[float, int, dict[str, Any]]:
        """Cross-entropy and accuracy of ``parameters`` on the local evaluation data."""
        import torch
        import torch.nn.functional as F

        self._load(parameters)
        self.model.eval()
        with torch.no_grad():
            logits = self.model(self.x_test)
            loss = float(F.cross_entropy(logits, self.y_test))
            acc = float((logits.argmax(1) == self.y_test).double().mean())
        return loss, int(self.y_test.shape[0]), {"accuracy": acc}


class BatchedTorchClients:
    r"""A population of MLP clients trained together: :class:`TorchClient`'s SGD, vectorised over clients.

    The clients of a round start from the same global model; their weights are stacked along a new
    leading axis (:math:`K` copies) and every layer runs as a batched matrix product
    (``torch.baddbmm``), so one autograd step trains all :math:`K` clients at once. Step :math:`s` takes
    each client's :math:`s`-th mini-batch of its own shuffled data (the same ``torch.randperm`` stream as
    :class:`TorchClient` with the same seed); a client whose data are used up is masked out (zero
    gradient, no proximal or weight-decay step), so each client does exactly its own number of SGD steps.

    Parameters
    ----------
    model : torch.nn.Sequential
        The shared architecture: ``nn.Linear`` layers and parameter-free modules (``nn.ReLU``,
        ``nn.Tanh``, ``nn.GELU``, ``nn.Identity``, ...). Anything else raises ``TypeError``: use
        :class:`TorchClient` for general models.
    datasets : sequence of (x, y)
        Each client's training data.
    lr, epochs, batch_size, weight_decay
        As in :class:`TorchClient` (overridable per round through the config).

    Notes
    -----
    The simulator calls :meth:`fit_many`; :meth:`client` gives one client as a :class:`TorchClient`
    (e.g. for federated evaluation or to run it under Flower).
    """

    def __init__(
        self,
        model: Any,
        datasets: Sequence[tuple[Any, Any]],
        *,
        lr: float = 0.01,
        epochs: int = 1,
        batch_size: int = 20,
        weight_decay: float = 0.0,
    ) -> None:
        import torch

        if not isinstance(model, torch.nn.Sequential):
            raise TypeError(f"model must be a torch.nn.Sequential MLP; got {type(model).__name__} (use TorchClient)")
        for i, layer in enumerate(model):
            if isinstance(layer, torch.nn.Dropout) or (
                not isinstance(layer, torch.nn.Linear) and (list(layer.parameters()) or list(layer.buffers()))
            ):
                raise TypeError(
                    f"model[{i}] is {type(layer).__name__}: BatchedTorchClients supports nn.Linear and "
                    "parameter-free deterministic layers only (use TorchClient)"
                )
        if len(datasets) == 0:
            raise ValueError("datasets must hold at least one client's (x, y)")
        self.model = model
        self.lr = check_positive("lr", lr)
        self.epochs = check_int("epochs", epochs, low=1)
        self.batch_size = check_int("batch_size", batch_size, low=1)
        self.weight_decay = check_real("weight_decay", weight_decay, low=0.0)
        xs, ys = [], []
        for k, item in enumerate(datasets):
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise TypeError(f"datasets[{k}] must be a pair (x, y)")
            xa, ya = _check_xy(item[0], item[1], f"datasets[{k}][0]", f"datasets[{k}][1]")
            xs.append(xa)
            ys.append(ya)
        shapes = {x.shape[1:] for x in xs}
        if len(shapes) != 1:
            raise ValueError(f"every client's x must have the same feature shape; got {sorted(shapes)}")
        self._x = torch.from_numpy(np.concatenate(xs))
        self._y = torch.from_numpy(np.concatenate(ys))
        sizes = np.array([len(y) for y in ys], dtype=np.int64)
        self.sizes = sizes
        self._start = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self._keys = list(model.state_dict().keys())
        self._param_keys = [k for k, _ in model.named_parameters()]

    def __len__(self) -> int:
        return int(self.sizes.size)

    def client(self, cid: int, x_test: Any = None, y_test: Any = None) -> TorchClient:
        """Client ``cid`` as a stand-alone :class:`TorchClient` (sharing the template model)."""
        cid = check_int("cid", cid, low=0, high=len(self) - 1)
        s, n = int(self._start[cid]), int(self.sizes[cid])
        return TorchClient(
            self.model,
            self._x[s : s + n].numpy(),
            self._y[s : s + n].numpy(),
            x_test,
            y_test,
            lr=self.lr,
            epochs=self.epochs,
            batch_size=self.batch_size,
            weight_decay=self.weight_decay,
        )

    def _forward(self, weights: list[Any], x: Any) -> Any:
        import torch

        h, j = x, 0
        for layer in self.model:
            if isinstance(layer, torch.nn.Linear):
                w = weights[j]
                b = weights[j + 1] if layer.bias is not None else None
                j += 2 if layer.bias is not None else 1
                wt = w.transpose(1, 2)  # (K, in, out)
                h = torch.baddbmm(b.unsqueeze(1), h, wt) if b is not None else torch.bmm(h, wt)
            else:
                h = layer(h)
        return h

    def fit_many(
        self, cids: Sequence[int], parameters: NDArrays, configs: Sequence[dict[str, Any]]
    ) -> list[tuple[NDArrays, int, dict[str, Any]]]:
        """Train clients ``cids`` from the same global ``parameters``; one config per client.

        Returns one ``(parameters, num_examples, {"train_loss": ...})`` per client, in order.
        """
        import torch
        import torch.nn.functional as F

        cids = [check_int("cids[i]", c, low=0, high=len(self) - 1) for c in cids]
        if len(configs) != len(cids):
            raise ValueError(f"configs must hold one config per client; got {len(configs)} for {len(cids)}")
        if len(parameters) != len(self._keys):
            raise ValueError(f"parameters has {len(parameters)} arrays; the model's state_dict has {len(self._keys)}")
        sd = self.model.state_dict()
        glob = {}
        for j, (k, a) in enumerate(zip(self._keys, parameters)):
            t = torch.as_tensor(np.asarray(a)).to(sd[k].dtype)
            if tuple(t.shape) != tuple(sd[k].shape):
                raise ValueError(
                    f"parameters[{j}] ({k!r}) has shape {tuple(t.shape)}; the model expects {tuple(sd[k].shape)}"
                )
            if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                raise ValueError(f"parameters[{j}] ({k!r}) contains NaN or inf")
            glob[k] = t
        kk = len(cids)
        opts = [_fit_options(c, self.lr, self.epochs, self.batch_size) for c in configs]
        if len({(e, b) for _, e, b, _ in opts}) != 1:
            raise ValueError("the clients of one fit_many call must share local-epochs and batch-size")
        epochs, bs = opts[0][1], opts[0][2]
        dtype = self._x.dtype
        lr = torch.tensor([o[0] for o in opts], dtype=dtype)
        mu = torch.tensor([o[3] for o in opts], dtype=dtype)
        sizes_np = self.sizes[cids]
        starts_np = self._start[cids]
        sizes = torch.from_numpy(sizes_np)
        gens = [torch.Generator().manual_seed(int(c.get("seed", 0))) for c in configs]

        anchor = [glob[k] for k in self._param_keys]
        weights = [a.unsqueeze(0).repeat(kk, *([1] * a.dim())).requires_grad_(True) for a in anchor]
        with torch.no_grad():  # q-FFL's F_k(θ_t): the received model's loss on each client's data
            idx = torch.from_numpy(np.concatenate([np.arange(s, s + n) for s, n in zip(starts_np, sizes_np)]))
            owner = torch.repeat_interleave(torch.arange(kk), sizes)
            self.model.load_state_dict(glob)  # the template holds the global model
            ce = F.cross_entropy(self.model(self._x[idx]), self._y[idx], reduction="none")
            start_loss = torch.zeros(kk, dtype=ce.dtype).index_add_(0, owner, ce) / sizes.to(ce.dtype)
        steps = -(-int(sizes_np.max()) // bs)
        feat = self._x.shape[1:]
        # position p of client i's shuffled data sits at column p of its row; padding is masked out
        valid_np = np.arange(steps * bs)[None, :] < sizes_np[:, None]
        valid = torch.from_numpy(valid_np)
        counts = valid_np.reshape(kk, steps, bs).sum(2)  # examples of client i in step s
        # per-example loss weights 1/|B| (the mean over the client's batch), and which clients are active
        wts_all = torch.from_numpy(
            (valid_np.reshape(kk, steps, bs) / np.maximum(counts, 1)[:, :, None]).reshape(kk, steps * bs)
        ).to(dtype)
        active_all = torch.from_numpy(counts > 0).to(dtype)  # (kk, steps)
        use_mu = bool((mu > 0).any())
        shapes = [(kk,) + (1,) * (w.dim() - 1) for w in weights]
        offsets = torch.repeat_interleave(torch.from_numpy(starts_np), sizes)
        for _ in range(epochs):
            perms = [torch.randperm(int(n), generator=g) for n, g in zip(sizes_np, gens)]
            orders = torch.zeros((kk, steps * bs), dtype=torch.int64)
            orders[valid] = torch.cat(perms) + offsets
            for s in range(steps):
                sl = slice(s * bs, (s + 1) * bs)
                gi = orders[:, sl].reshape(-1)
                out = self._forward(weights, self._x[gi].reshape(kk, bs, *feat))
                ce = F.cross_entropy(out.reshape(kk * bs, -1), self._y[gi], reduction="none")
                grads = torch.autograd.grad((ce * wts_all[:, sl].reshape(-1)).sum(), weights)
                active = active_all[:, s]
                with torch.no_grad():
                    for w, a, g, shape in zip(weights, anchor, grads, shapes):
                        if self.weight_decay > 0:
                            g = g + self.weight_decay * active.view(shape) * w
                        if use_mu:
                            g = g + (mu * active).view(shape) * (w - a)
                        w -= lr.view(shape) * g
        trained = {k: w.detach().numpy() for k, w in zip(self._param_keys, weights)}
        fixed = {k: glob[k].numpy() for k in self._keys if k not in trained}
        losses = start_loss.tolist()
        results = []
        for i in range(kk):
            arrays = [trained[k][i].copy() if k in trained else fixed[k].copy() for k in self._keys]
            results.append((arrays, int(sizes_np[i]), {"train_loss": float(losses[i])}))
        return results
