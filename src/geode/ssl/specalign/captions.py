r"""Instance-level captions of 8x8 handwritten digits, for SpecAlign's real-encoder reading.

Each caption names the class and five attributes measured from the image itself, so that two images of the
same digit usually get different captions and retrieval among same-class items is possible:

- *stroke thickness*: ink mass, the mean pixel intensity (sklearn digits: 0..16);
- *slant*: the shear of the ink distribution, :math:`-\mu_{11} / \mu_{02}` with :math:`\mu` the central
  moments in (column x, row y) coordinates, rows counted downwards, so that a stroke whose top lies to the
  right is positive ("leaning right");
- *width* and *height*: the ink's standard deviation along columns and rows (a spread, not a bounding box:
  the 8x8 bounding boxes of sklearn digits are almost always 7-8 pixels, too coarse to split);
- *position*: the ink centroid, horizontal and vertical.

Every continuous attribute is cut into three bins at its terciles (:func:`fit_attribute_edges`, fitted on a
set of images the caller chooses; the claim uses the unpaired image pool, never the test images).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from geode.core.validation import check_array

__all__ = ["ATTRIBUTES", "digit_attributes", "digit_captions", "fit_attribute_edges"]

ATTRIBUTES = ("ink", "slant", "width", "height", "x", "y")
_WORDS = {
    "ink": ("thin strokes", "medium strokes", "thick strokes"),
    "slant": ("leaning left", "upright", "leaning right"),
    "width": ("narrow", "of medium width", "wide"),
    "height": ("short", "of medium height", "tall"),
    "x": ("left of centre", "horizontally centred", "right of centre"),
    "y": ("high in the frame", "at mid height", "low in the frame"),
}
_DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def digit_attributes(images: np.ndarray) -> dict[str, np.ndarray]:
    """Measured attributes of grey-level digit images.

    Parameters
    ----------
    images : array, shape (n, h, w)
        Non-negative intensities; every image must have some ink.

    Returns
    -------
    dict of str to ndarray of shape (n,)
        ``ink`` (mean intensity), ``slant`` (:math:`-\\mu_{11}/\\mu_{02}`), ``width`` / ``height`` (standard
        deviation of the ink along columns / rows, pixels), ``x`` / ``y`` (ink centroid, pixels from the
        left / top edge).
    """
    img = check_array("images", images, ndim=3)
    if (img < 0).any():
        raise ValueError("images must be non-negative intensities")
    mass = img.sum(axis=(1, 2))
    if (mass <= 0).any():
        raise ValueError("images: every image needs some ink (a positive pixel)")
    _, h, w = img.shape
    rows, cols = np.mgrid[0:h, 0:w].astype(np.float64)
    p = img / mass[:, None, None]
    cx = (p * cols).sum(axis=(1, 2))
    cy = (p * rows).sum(axis=(1, 2))
    dx = cols[None] - cx[:, None, None]
    dy = rows[None] - cy[:, None, None]
    mu20 = (p * dx**2).sum(axis=(1, 2))
    mu02 = (p * dy**2).sum(axis=(1, 2))
    mu11 = (p * dx * dy).sum(axis=(1, 2))
    return {
        "ink": img.mean(axis=(1, 2)),
        "slant": -mu11 / np.maximum(mu02, 1e-12),
        "width": np.sqrt(mu20),
        "height": np.sqrt(mu02),
        "x": cx,
        "y": cy,
    }


def fit_attribute_edges(attributes: Mapping[str, np.ndarray]) -> dict[str, tuple[float, float]]:
    """Tercile cut points (1/3 and 2/3 quantiles) of every attribute."""
    missing = [a for a in ATTRIBUTES if a not in attributes]
    if missing:
        raise ValueError(f"attributes: missing {missing}")
    edges = {}
    for a in ATTRIBUTES:
        v = np.asarray(attributes[a], dtype=np.float64)
        if v.ndim != 1 or v.size < 3 or not np.isfinite(v).all():
            raise ValueError(f"attributes[{a!r}] must be a finite 1-d array of at least 3 values")
        lo, hi = np.quantile(v, [1 / 3, 2 / 3])
        edges[a] = (float(lo), float(hi))
    return edges


def digit_captions(
    labels: np.ndarray, attributes: Mapping[str, np.ndarray], edges: Mapping[str, tuple[float, float]]
) -> list[str]:
    """One caption per image: class word plus the binned attributes, in a fixed template.

    Example: ``"a handwritten seven with thick strokes, leaning right, narrow and tall, left of centre and
    high in the frame"``. Deterministic: the same inputs give the same strings.
    """
    y = np.asarray(labels)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer) or ((y < 0) | (y > 9)).any():
        raise ValueError("labels must be a 1-d integer array of digits 0..9")
    bins = {}
    for a in ATTRIBUTES:
        v = np.asarray(attributes[a], dtype=np.float64)
        if v.shape != y.shape:
            raise ValueError(f"attributes[{a!r}] has shape {v.shape}; labels have {y.shape}")
        lo, hi = edges[a]
        bins[a] = (v > lo).astype(int) + (v > hi).astype(int)
    out = []
    for i, c in enumerate(y):
        w = {a: _WORDS[a][bins[a][i]] for a in ATTRIBUTES}
        out.append(
            f"a handwritten {_DIGITS[c]} with {w['ink']}, {w['slant']}, {w['width']} and {w['height']}, "
            f"{w['x']} and {w['y']}"
        )
    return out
