r"""Test signals and the undersampled-Fourier MRI operator of the ``inr-error`` claim check.

* :func:`piecewise_chirp`: a 1-D piecewise-smooth signal with jumps plus a linear chirp;
* :func:`sample_image`: scikit-learn's sample photographs (``china``, ``flower``), grey and downsampled;
* :func:`shepp_logan`: the Shepp-Logan head phantom, rasterised by us from the standard ellipse table;
* :class:`UndersampledFourier`: Cartesian k-space sampling :math:`y = S F x`, with :math:`F` the unitary
  2-D DFT and :math:`S` a variable-density selection of phase-encode lines (rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from geode.core import as_generator, check_array, check_choice, check_int, check_real

__all__ = ["SHEPP_LOGAN_ELLIPSES", "UndersampledFourier", "piecewise_chirp", "sample_image", "shepp_logan"]

# (intensity of the original table, a, b, x0, y0, phi in degrees); Shepp & Logan (1974), Table 1.
# The "modified" phantom (Toft 1996) keeps the geometry and raises the contrast: 1, -0.8, -0.2, -0.2, 0.1 x 6.
SHEPP_LOGAN_ELLIPSES: tuple[tuple[float, float, float, float, float, float], ...] = (
    (2.00, 0.6900, 0.9200, 0.00, 0.0000, 0.0),
    (-0.98, 0.6624, 0.8740, 0.00, -0.0184, 0.0),
    (-0.02, 0.1100, 0.3100, 0.22, 0.0000, -18.0),
    (-0.02, 0.1600, 0.4100, -0.22, 0.0000, 18.0),
    (0.01, 0.2100, 0.2500, 0.00, 0.3500, 0.0),
    (0.01, 0.0460, 0.0460, 0.00, 0.1000, 0.0),
    (0.01, 0.0460, 0.0460, 0.00, -0.1000, 0.0),
    (0.01, 0.0460, 0.0230, -0.08, -0.6050, 0.0),
    (0.01, 0.0230, 0.0230, 0.00, -0.6060, 0.0),
    (0.01, 0.0230, 0.0460, 0.06, -0.6050, 0.0),
)
"""The ten ellipses of the Shepp-Logan phantom: (intensity, a, b, x0, y0, phi in degrees), Shepp & Logan (1974)."""
_MODIFIED_INTENSITIES = (1.0, -0.8, -0.2, -0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1)


def piecewise_chirp(n: int = 4096) -> np.ndarray:
    r"""A 1-D piecewise-smooth signal with three jumps plus a chirp, sampled at :math:`x_i = (i + 1/2)/n`.

    .. math::

        f(x) = p(x) + 0.3 \sin\!\big(2\pi (4x + 40x^2)\big),

    with :math:`p` smooth on :math:`[0, .25), [.25, .5), [.5, .8), [.8, 1)` and discontinuous at the breaks
    (a sine, a parabola, a ramp and a Gaussian bump). The chirp's local frequency rises from 4 to 84 cycles.

    Parameters
    ----------
    n : int
        Number of samples (>= 16).

    Returns
    -------
    ndarray, shape (n,)
    """
    n = check_int("n", n, low=16)
    x = (np.arange(n) + 0.5) / n
    p = np.select(
        [x < 0.25, x < 0.5, x < 0.8],
        [0.5 * np.sin(4 * np.pi * x) + x, 1.0 - 8.0 * (x - 0.375) ** 2, -0.5 + x],
        np.exp(-50.0 * (x - 0.9) ** 2),
    )
    return p + 0.3 * np.sin(2 * np.pi * (4 * x + 40 * x**2))


def sample_image(name: str = "china", size: int = 128) -> np.ndarray:
    """One of scikit-learn's sample photographs, grey (ITU-R 601 luma) in [0, 1], square, ``size`` x ``size``.

    The photograph (427 x 640) is centre-cropped to the largest square whose side is a multiple of ``size``
    and block-averaged down to ``size`` (an exact box filter, no interpolation).

    Parameters
    ----------
    name : {"china", "flower"}
    size : int
        Side of the output, 8 to 427.

    Returns
    -------
    ndarray, shape (size, size)
    """
    import importlib.util
    from pathlib import Path

    from PIL import Image

    check_choice("name", name, ("china", "flower"))
    size = check_int("size", size, low=8, high=427)
    # the JPEG shipped in scikit-learn's wheel, read without importing sklearn (a slow import)
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("sample_image needs scikit-learn, which ships the sample photographs")
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "images" / f"{name}.jpg"
    with Image.open(path) as im:
        rgb = np.asarray(im.convert("RGB"), dtype=float) / 255.0
    grey = rgb @ np.array([0.299, 0.587, 0.114])
    factor = min(grey.shape) // size
    side = factor * size
    r0, c0 = (grey.shape[0] - side) // 2, (grey.shape[1] - side) // 2
    crop = grey[r0 : r0 + side, c0 : c0 + side]
    return crop.reshape(size, factor, size, factor).mean(axis=(1, 3))


def shepp_logan(size: int = 128, *, modified: bool = True) -> np.ndarray:
    r"""The Shepp-Logan head phantom on a ``size`` x ``size`` grid over :math:`[-1, 1]^2`.

    Each ellipse :math:`(A, a, b, x_0, y_0, \varphi)` of :data:`SHEPP_LOGAN_ELLIPSES` adds :math:`A` on

    .. math::

        \frac{\big((x - x_0)\cos\varphi + (y - y_0)\sin\varphi\big)^2}{a^2}
        + \frac{\big(-(x - x_0)\sin\varphi + (y - y_0)\cos\varphi\big)^2}{b^2} \le 1,

    sampled at pixel centres, with :math:`x` along columns (left to right) and :math:`y` along rows (bottom
    to top, so that row 0 is the top of the head).

    Parameters
    ----------
    size : int
        Side in pixels (>= 8).
    modified : bool
        Toft's higher-contrast intensities (default; brain 0.2, skull 1.0) instead of the original ones
        (brain 1.02, skull 2.0).

    Returns
    -------
    ndarray, shape (size, size)
    """
    size = check_int("size", size, low=8)
    c = (np.arange(size) + 0.5) / size * 2.0 - 1.0
    x = c[None, :]
    y = -c[:, None]
    img = np.zeros((size, size))
    for k, (a0, a, b, x0, y0, phi) in enumerate(SHEPP_LOGAN_ELLIPSES):
        amp = _MODIFIED_INTENSITIES[k] if modified else a0
        t = np.deg2rad(phi)
        u = (x - x0) * np.cos(t) + (y - y0) * np.sin(t)
        v = -(x - x0) * np.sin(t) + (y - y0) * np.cos(t)
        img += amp * ((u / a) ** 2 + (v / b) ** 2 <= 1.0)
    return img


class UndersampledFourier:
    r"""Cartesian undersampled MRI: :math:`y = S F x`, phase-encode lines (rows of k-space) kept by a mask.

    :math:`F` is the unitary 2-D DFT (``norm="ortho"``) and :math:`S` keeps the rows of k-space in
    :attr:`rows` (all read-out columns). The adjoint is :math:`A^H y = F^H S^T y` (zero filling then the
    inverse DFT), so :math:`\langle A x, y\rangle = \langle x, A^H y\rangle` for complex :math:`x`, :math:`y`.

    Variable density (inferred; the paper gives no mask): the ``center_fraction`` lowest frequencies are
    always kept, the remaining lines are drawn without replacement with probability decaying as
    :math:`(1 + |k_y| / 8)^{-2}` until ``height / acceleration`` lines are kept.

    Parameters
    ----------
    shape : tuple of int
        Image shape (height, width).
    acceleration : float
        Undersampling factor (>= 1); the number of kept rows is ``round(height / acceleration)``.
    center_fraction : float
        Fraction of rows around k = 0 that are always kept.
    seed : int or Generator
        The mask's randomness.
    rows : array_like of int, optional
        Explicit kept rows (overrides the random mask).

    Operators for :func:`geode.sciml.inr_error.fit_family` follow the same protocol: ``shape`` (image),
    ``measurement_shape``, ``forward`` and ``adjoint`` acting on the trailing axes of numpy arrays or torch
    tensors.
    """

    def __init__(
        self,
        shape: tuple[int, int],
        *,
        acceleration: float = 4.0,
        center_fraction: float = 0.08,
        seed: Any = 0,
        rows: Any = None,
    ) -> None:
        if len(shape) != 2:
            raise ValueError(f"shape must be (height, width); got {shape!r}")
        h, w = (check_int("shape[0]", shape[0], low=2), check_int("shape[1]", shape[1], low=2))
        self.shape = (h, w)
        if rows is not None:
            r = check_array("rows", rows, ndim=1, dtype=None)
            if not np.issubdtype(r.dtype, np.integer) or r.size == 0 or r.min() < 0 or r.max() >= h:
                raise ValueError(f"rows must be non-empty integers in [0, {h}); got {r!r}")
            self.rows = np.unique(r)
        else:
            acc = check_real("acceleration", acceleration, low=1.0)
            cf = check_real("center_fraction", center_fraction, low=0.0, high=1.0)
            rng = as_generator(seed)
            n_keep = max(1, int(round(h / acc)))
            k = np.fft.fftfreq(h) * h  # signed frequency index of each row
            centre = np.argsort(np.abs(k), kind="stable")[: min(n_keep, int(round(cf * h)))]
            rest = np.setdiff1d(np.arange(h), centre)
            p = (1.0 + np.abs(k[rest]) / 8.0) ** -2.0
            extra = rng.choice(rest, size=n_keep - centre.size, replace=False, p=p / p.sum())
            self.rows = np.sort(np.concatenate([centre, extra]))
        self.measurement_shape = (int(self.rows.size), w)

    @property
    def acceleration(self) -> float:
        """The achieved undersampling factor ``height / kept rows``."""
        return self.shape[0] / self.rows.size

    def mask(self) -> np.ndarray:
        """The k-space sampling mask, shape ``shape``, True on kept rows (unshifted DFT order)."""
        m = np.zeros(self.shape, dtype=bool)
        m[self.rows] = True
        return m

    def _check(self, name: str, x: Any, shape: tuple[int, int]) -> None:
        if not hasattr(x, "shape") or not hasattr(x, "dtype"):
            raise TypeError(f"{name} must be a numpy array or a torch tensor; got {type(x).__name__}")
        if tuple(x.shape[-2:]) != shape:
            raise ValueError(f"{name} must have trailing shape {shape}; got {tuple(x.shape)}")

    def forward(self, x: Any) -> Any:
        """:math:`S F x` on the last two axes; numpy array or torch tensor in, complex of the same kind out.

        A linear operator applied in every step of a fit: NaN and inf propagate (no scan of ``x``)."""
        self._check("x", x, self.shape)
        if hasattr(x, "detach"):
            import torch

            return torch.fft.fft2(x, norm="ortho")[..., torch.as_tensor(self.rows), :]
        return np.fft.fft2(np.asarray(x), norm="ortho")[..., self.rows, :]

    def adjoint(self, y: Any) -> Any:
        """:math:`F^H S^T y`: zero-fill the missing rows, inverse unitary DFT; complex output."""
        self._check("y", y, self.measurement_shape)
        if hasattr(y, "detach"):
            import torch

            full = torch.zeros(
                (*y.shape[:-2], *self.shape),
                dtype=torch.complex128 if y.dtype in (torch.complex128, torch.float64) else torch.complex64,
            )
            full[..., torch.as_tensor(self.rows), :] = y.to(full.dtype)
            return torch.fft.ifft2(full, norm="ortho")
        y = np.asarray(y)
        full = np.zeros((*y.shape[:-2], *self.shape), dtype=complex)
        full[..., self.rows, :] = y
        return np.fft.ifft2(full, norm="ortho")
