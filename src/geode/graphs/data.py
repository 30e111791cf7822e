"""Graphs for node classification: CSBM and mixed-homophily generators, edge homophily, offline loaders.

Everything returns a PyTorch Geometric :class:`~torch_geometric.data.Data` (``x``, ``y``, ``edge_index``,
and ``train_mask``/``val_mask``/``test_mask`` where the graph comes with splits). Nothing is downloaded:
the real benchmark graphs are read from a folder the user names (default: ``../shared/data/graphs``
beside the repository, or ``$GEODE_GRAPHS``), through PyG's own ``Planetoid`` (Cora, CiteSeer) and
``HeterophilousGraphDataset`` (minesweeper, tolokers) with the raw files linked into a cache outside the
repository; the other ``.npz`` files of the same (yandex-research) format are read the way
``HeterophilousGraphDataset.process`` reads them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from geode.core.validation import check_int, check_real

__all__ = [
    "GRAPH_NAMES",
    "csbm",
    "default_graph_dir",
    "edge_homophily",
    "load_graph",
    "mixed_homophily_graph",
    "random_split",
    "validate_edge_index",
]

# name -> file stem in the folder; Cora/CiteSeer are Planetoid files (ind.<name>.*), the rest .npz
GRAPH_NAMES: tuple[str, ...] = (
    "cora",
    "citeseer",
    "texas",
    "cornell",
    "wisconsin",
    "chameleon",
    "chameleon_filtered",
    "squirrel",
    "squirrel_filtered",
    "actor",
    "minesweeper",
    "tolokers",
)
_PLANETOID = {"cora": "Cora", "citeseer": "CiteSeer"}
_PYG_HETEROPHILOUS = ("minesweeper", "tolokers")


def _torch() -> Any:
    import torch

    return torch


def _data(**kw: Any) -> Any:
    try:
        from torch_geometric.data import Data
    except ImportError as exc:  # pragma: no cover - the extra is part of make setup
        raise ImportError("geode.graphs needs PyTorch Geometric: pip install 'geode[graphs]'") from exc
    return Data(**kw)


def validate_edge_index(edge_index: Any, num_nodes: int, *, symmetric: bool = False, name: str = "edge_index") -> None:
    """Check that ``edge_index`` is an integer ``[2, E]`` tensor inside ``[0, num_nodes)`` (and symmetric).

    Raises
    ------
    ValueError
        Naming ``name`` and what is wrong: shape, dtype, an edge outside the node range, or (with
        ``symmetric=True``) an edge whose reverse is missing.
    """
    torch = _torch()
    if not isinstance(edge_index, torch.Tensor):
        raise TypeError(f"{name} must be an integer tensor of shape [2, E]; got {type(edge_index).__name__}")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"{name} must be an integer tensor of shape [2, E]; got shape {tuple(edge_index.shape)}")
    if edge_index.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"{name} must hold integers (int64), got {edge_index.dtype}")
    num_nodes = check_int("num_nodes", num_nodes, low=0)
    if edge_index.numel():
        bad = (edge_index < 0) | (edge_index >= num_nodes)
        if bool(bad.any()):
            e = int(bad.any(0).nonzero()[0, 0])
            node = int(edge_index[0, e] if bad[0, e] else edge_index[1, e])
            raise ValueError(
                f"{name} has edges outside the node range [0, {num_nodes}): node index {node} in edge {e} "
                f"({int(edge_index[0, e])}, {int(edge_index[1, e])}); min {int(edge_index.min())}, "
                f"max {int(edge_index.max())}"
            )
    if symmetric and edge_index.numel():
        fwd = edge_index[0].long() * num_nodes + edge_index[1].long()
        rev = edge_index[1].long() * num_nodes + edge_index[0].long()
        if not bool(torch.isin(rev, fwd).all()):
            raise ValueError(f"{name} must be symmetric (undirected): some edge (i, j) has no (j, i)")


def edge_homophily(edge_index: Any, y: Any) -> float:
    """Edge homophily: the share of edges whose two ends have the same label, ``|{(i,j): y_i = y_j}| / |E|``."""
    torch = _torch()
    if isinstance(edge_index, (np.ndarray, list, tuple)):  # an index array: read as a tensor
        arr = np.asarray(edge_index)
        if arr.dtype.kind in "iu":
            edge_index = torch.as_tensor(arr)
    try:
        y = torch.as_tensor(np.asarray(y) if not isinstance(y, torch.Tensor) else y)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"y must be a tensor or array of node labels; got {type(y).__name__}") from exc
    if y.dim() != 1:
        raise ValueError(f"y must be one label per node, shape [N]; got {tuple(y.shape)}")
    validate_edge_index(edge_index, int(y.numel()))
    if edge_index.size(1) == 0:
        raise ValueError("edge_index has no edges: edge homophily is undefined")
    return float((y[edge_index[0]] == y[edge_index[1]]).float().mean())


def _undirected(src: np.ndarray, dst: np.ndarray, n: int) -> Any:
    torch = _torch()
    keep = src != dst
    src, dst = src[keep], dst[keep]
    code = np.unique(np.concatenate([src * n + dst, dst * n + src]))
    return torch.from_numpy(np.stack([code // n, code % n]).astype(np.int64))


def random_split(n: int, rng: np.random.Generator, train: float = 0.6, val: float = 0.2) -> dict[str, Any]:
    """Boolean train/val/test masks of a random ``train/val/1-train-val`` split of ``n`` nodes."""
    n = check_int("n", n, low=1)
    train = check_real("train", train, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    val = check_real("val", val, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    if not (0 < train < 1 and 0 < val < 1 and train + val < 1):
        raise ValueError(f"train and val must be in (0, 1) with train + val < 1, got {train}, {val}")
    torch = _torch()
    perm = rng.permutation(n)
    a, b = int(round(train * n)), int(round((train + val) * n))
    masks = {}
    for key, idx in (("train_mask", perm[:a]), ("val_mask", perm[a:b]), ("test_mask", perm[b:])):
        m = torch.zeros(n, dtype=torch.bool)
        m[torch.from_numpy(idx)] = True
        masks[key] = m
    return masks


def _csbm_arrays(
    labels: np.ndarray, homophily: np.ndarray, degree: float, rng: np.random.Generator, groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Edges: each source draws its targets inside its group, same class with its node's probability h."""
    n = labels.size
    m = int(round(n * degree / 2))
    src = rng.integers(0, n, size=m)
    same = rng.random(m) < homophily[src]
    dst = np.empty(m, dtype=np.int64)
    for g in np.unique(groups):
        for c in np.unique(labels):
            pool_same = np.flatnonzero((groups == g) & (labels == c))
            pool_diff = np.flatnonzero((groups == g) & (labels != c))
            sel = (groups[src] == g) & (labels[src] == c)
            s = sel & same
            d = sel & ~same
            dst[s] = pool_same[rng.integers(0, pool_same.size, size=int(s.sum()))]
            if pool_diff.size:
                dst[d] = pool_diff[rng.integers(0, pool_diff.size, size=int(d.sum()))]
            else:
                dst[d] = pool_same[rng.integers(0, pool_same.size, size=int(d.sum()))]
    return src, dst


def _features(labels: np.ndarray, classes: int, dim: int, signal: float, rng: np.random.Generator) -> np.ndarray:
    means = rng.standard_normal((classes, dim))
    means -= means.mean(0, keepdims=True)
    means *= signal / np.sqrt(dim) / np.linalg.norm(means, axis=1, keepdims=True).mean() * np.sqrt(dim)
    return (means[labels] + rng.standard_normal((labels.size, dim))).astype(np.float32)


def csbm(
    num_nodes: int = 1000,
    num_classes: int = 4,
    homophily: float = 0.5,
    *,
    degree: float = 10.0,
    num_features: int = 50,
    signal: float = 1.0,
    seed: int = 0,
    train: float = 0.6,
    val: float = 0.2,
) -> Any:
    """Contextual stochastic block model with a set edge homophily.

    Labels are balanced over ``num_classes``; features are ``x_i = mu_{y_i} + eps_i`` with centred class
    means of norm ``signal`` and ``eps ~ N(0, I)``; ``num_nodes * degree / 2`` edges are drawn from
    uniform sources, each to a node of the same class with probability ``h`` (``homophily``) and else to a
    node of another class, then symmetrised (self-loops and duplicates dropped), so the edge homophily is
    ``h`` up to sampling noise. A random ``train/val/test`` split is attached.

    The contextual SBM of Chien et al. (GPR-GNN) sets the balance of graph and feature signal by one
    parameter; we set the edge homophily directly, as the Castor notes ask, which is the quantity the
    paper's homophily spectrum is about.
    """
    _check_common(num_nodes, num_classes, degree, num_features, signal)
    homophily = check_real("homophily", homophily, low=0.0, high=1.0)
    if not 0.0 <= homophily <= 1.0:
        raise ValueError(f"homophily must be in [0, 1], got {homophily}")
    return _generate(
        num_nodes,
        num_classes,
        np.full(num_nodes, homophily),
        np.zeros(num_nodes, np.int64),
        degree,
        num_features,
        signal,
        seed,
        train,
        val,
    )


def mixed_homophily_graph(
    num_nodes: int = 1000,
    num_classes: int = 4,
    homophily: tuple[float, float] = (0.85, 0.15),
    *,
    degree: float = 10.0,
    num_features: int = 50,
    signal: float = 1.0,
    seed: int = 0,
    train: float = 0.6,
    val: float = 0.2,
) -> Any:
    """A graph whose two halves have different local homophily (default 0.85 and 0.15).

    Each half is a CSBM with its own ``h`` (edges stay inside a half), and ``data.region`` says which
    half a node is in (never given to a model). A global polynomial filter must pick one response for
    both halves; a per-node filter can serve each.
    """
    _check_common(num_nodes, num_classes, degree, num_features, signal)
    if not isinstance(homophily, (tuple, list)) or len(homophily) != 2:
        raise ValueError(f"homophily must be two values in [0, 1], got {homophily!r}")
    homophily = tuple(check_real("homophily", h, low=0.0, high=1.0) for h in homophily)
    if len(homophily) != 2 or not all(0.0 <= h <= 1.0 for h in homophily):
        raise ValueError(f"homophily must be two values in [0, 1], got {homophily}")
    rng = np.random.default_rng(seed + 7919)
    region = rng.permutation(np.arange(num_nodes) % 2)
    h = np.where(region == 0, homophily[0], homophily[1])
    data = _generate(num_nodes, num_classes, h, region, degree, num_features, signal, seed, train, val)
    data.region = _torch().from_numpy(region)
    return data


def _check_common(num_nodes: int, num_classes: int, degree: float, num_features: int, signal: float) -> None:
    if not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes must be an int >= 2, got {num_classes!r}")
    if not isinstance(num_nodes, int) or num_nodes < 4 * num_classes:
        raise ValueError(f"num_nodes must be an int >= 4 * num_classes, got {num_nodes!r}")
    check_real("degree", degree, low=0.0, low_inclusive=False)
    if not isinstance(num_features, int) or num_features < 1:
        raise ValueError(f"num_features must be an int >= 1, got {num_features!r}")
    check_real("signal", signal, low=0.0)


def _generate(
    n: int,
    c: int,
    h: np.ndarray,
    groups: np.ndarray,
    degree: float,
    dim: int,
    signal: float,
    seed: int,
    train: float,
    val: float,
) -> Any:
    torch = _torch()
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % c)
    src, dst = _csbm_arrays(labels, h, degree, rng, groups)
    x = _features(labels, c, dim, signal, rng)
    return _data(
        x=torch.from_numpy(x),
        y=torch.from_numpy(labels.astype(np.int64)),
        edge_index=_undirected(src, dst, n),
        **random_split(n, rng, train, val),
    )


def default_graph_dir() -> Path | None:
    """``$GEODE_GRAPHS``, else ``../shared/data/graphs`` beside the repository (or the working directory)."""
    env = os.environ.get("GEODE_GRAPHS")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    candidates = [p.parent / "shared" / "data" / "graphs" for p in here.parents[:6]]
    candidates.append(Path.cwd().parent / "shared" / "data" / "graphs")
    for c in candidates:
        if c.is_dir():
            return c
    return None


def _cache_dir(cache: str | os.PathLike[str] | None) -> Path:
    if cache is not None:
        return Path(cache)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "geode" / "graphs"


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.is_symlink() or dst.exists():
        if dst.resolve() == src.resolve():
            return
        dst.unlink()
    os.symlink(src, dst)


def load_graph(
    name: str,
    root: str | os.PathLike[str] | None = None,
    *,
    cache: str | os.PathLike[str] | None = None,
) -> Any:
    """One of the real benchmark graphs (:data:`GRAPH_NAMES`), read offline as a PyG ``Data``.

    Parameters
    ----------
    name : str
        ``cora``, ``citeseer`` (Planetoid public split: 20 labels per class, 500 val, 1000 test; masks of
        shape ``[n]``), or one of the yandex-research ``.npz`` graphs (the 10 standard splits; masks of
        shape ``[n, 10]``; edges symmetrised).
    root : path, optional
        The folder holding the files; default :func:`default_graph_dir`.
    cache : path, optional
        Where PyG keeps its processed copy (links to the raw files, never copies); default
        ``~/.cache/geode/graphs``. Never inside the repository.

    Raises
    ------
    FileNotFoundError
        When the folder or a file is missing (nothing is downloaded); the claim checks fall back to
        synthetic graphs (CSBM) and say so.
    """
    key = str(name).lower().replace("-", "_")
    if key not in GRAPH_NAMES:
        raise ValueError(f"name must be one of {', '.join(GRAPH_NAMES)}; got {name!r}")
    folder = Path(root) if root is not None else default_graph_dir()
    if folder is None or not folder.is_dir():
        where = folder if folder else "no root given, $GEODE_GRAPHS unset and no ../shared/data/graphs"
        raise FileNotFoundError(
            f"graph folder not found ({where}); pass root= or set GEODE_GRAPHS. Nothing is downloaded; "
            "use the synthetic graphs (geode.graphs.csbm) instead"
        )
    folder = folder.resolve()
    cache_dir = _cache_dir(cache)
    if key in _PLANETOID:
        from torch_geometric.datasets import Planetoid

        stems = ["x", "tx", "allx", "y", "ty", "ally", "graph", "test.index"]
        files = [folder / f"ind.{key}.{s}" for s in stems]
        _require(files, folder)
        pyg = _PLANETOID[key]
        for f in files:
            _link(f, cache_dir / pyg / "raw" / f.name)
        ds = Planetoid(str(cache_dir), pyg)
        return ds[0]
    npz = folder / f"{key}.npz"
    _require([npz], folder)
    if key in _PYG_HETEROPHILOUS:
        from torch_geometric.datasets import HeterophilousGraphDataset

        _link(npz, cache_dir / key / "raw" / npz.name)
        return HeterophilousGraphDataset(str(cache_dir), key)[0]
    return _read_npz(npz)


def _require(files: list[Path], folder: Path) -> None:
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"missing in {folder}: {', '.join(missing)} (nothing is downloaded)")


def _read_npz(path: Path) -> Any:
    """The yandex-research format, read as ``HeterophilousGraphDataset.process`` reads it."""
    torch = _torch()
    from torch_geometric.utils import to_undirected

    raw = np.load(path)
    x = torch.from_numpy(raw["node_features"]).float()
    y = torch.from_numpy(raw["node_labels"]).long()
    edge_index = to_undirected(torch.from_numpy(raw["edges"]).t().contiguous().long(), num_nodes=x.size(0))
    masks = {
        k: torch.from_numpy(raw[f"{k}s"]).t().contiguous().bool() for k in ("train_mask", "val_mask", "test_mask")
    }
    return _data(x=x, y=y, edge_index=edge_index, **masks)
