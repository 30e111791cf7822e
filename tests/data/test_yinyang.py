"""Tests of the Yin-Yang data set: the label convention, the geometry, determinism, validation."""

from __future__ import annotations

import numpy as np
import pytest

from geode.data.yinyang import YINYANG_CLASS_NAMES, YinYangDataset, yinyang_class


def test_label_convention_is_pinned():
    # the reference code labels dots 2 and otherwise int(is_yin); label 1 is the "yin" criterion:
    # upper half (outside the right lobe) and the ring around the left dot
    pts = {
        (0.5, 0.9): 1,  # top of the disc
        (0.5, 0.1): 0,  # bottom of the disc
        (0.25, 0.5): 2,  # left dot centre
        (0.75, 0.5): 2,  # right dot centre
        (0.45, 0.5): 1,  # ring around the left dot (d_l = 0.2)
        (0.55, 0.5): 0,  # ring around the right dot (d_r = 0.2)
        (0.75, 0.64): 0,  # upper part of the right lobe (d_r = 0.14 <= 0.25): not yin
        (0.25, 0.36): 1,  # lower part of the left lobe: yin
    }
    xy = np.array(list(pts))
    assert yinyang_class(xy[:, 0], xy[:, 1]).tolist() == list(pts.values())
    assert YINYANG_CLASS_NAMES == ("yang", "yin", "dot")
    assert YinYangDataset.class_names[1] == "yin"


def test_point_symmetry_swaps_yin_and_yang():
    # rotating the symbol by 180 degrees about its centre exchanges yin and yang and keeps the dots
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 1, size=(4000, 2))
    xy = xy[np.hypot(xy[:, 0] - 0.5, xy[:, 1] - 0.5) < 0.5]
    a = yinyang_class(xy[:, 0], xy[:, 1])
    b = yinyang_class(1 - xy[:, 0], 1 - xy[:, 1])
    keep = np.abs(xy[:, 1] - 0.5) > 1e-9  # the horizontal diameter is a boundary case
    swap = np.array([1, 0, 2])
    assert np.mean(swap[a[keep]] == b[keep]) > 0.995


def test_samples_lie_in_the_disc_and_match_their_labels():
    ds = YinYangDataset(3000, seed=1)
    x, y = ds.X[:, 0].astype(float), ds.X[:, 1].astype(float)
    assert np.all(np.hypot(x - 0.5, y - 0.5) <= 0.5 + 1e-6)
    assert np.array_equal(yinyang_class(x, y), ds.y)
    assert np.allclose(ds.X[:, 2], 1 - ds.X[:, 0], atol=1e-6) and np.allclose(ds.X[:, 3], 1 - ds.X[:, 1], atol=1e-6)
    counts = np.bincount(ds.y, minlength=3) / len(ds)
    assert np.all(np.abs(counts - 1 / 3) < 0.04)  # classes drawn uniformly, not by area


def test_deterministic_given_the_seed():
    a, b, c = YinYangDataset(200, seed=7), YinYangDataset(200, seed=7), YinYangDataset(200, seed=8)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    assert not np.array_equal(a.X, c.X)
    g = np.random.default_rng(3)
    assert YinYangDataset(5, seed=g).X.shape == (5, 4)


def test_other_radii():
    ds = YinYangDataset(500, seed=2, r_small=0.2, r_big=1.0)
    x, y = ds.X[:, 0].astype(float), ds.X[:, 1].astype(float)
    assert np.all(np.hypot(x - 1.0, y - 1.0) <= 1.0 + 1e-6)
    assert np.array_equal(yinyang_class(x, y, r_small=0.2, r_big=1.0), ds.y)
    assert np.allclose(ds.X[:, 2], 2.0 - ds.X[:, 0], atol=1e-6)


def test_linear_classifier_is_far_from_solving_it():
    # reference: a shallow network reaches about 64 %, an ANN about 99 %
    from sklearn.linear_model import LogisticRegression

    train, test = YinYangDataset(2000, seed=42), YinYangDataset(1000, seed=41)
    acc = LogisticRegression(max_iter=2000).fit(train.X, train.y).score(test.X, test.y)
    assert 0.5 < acc < 0.75


def test_sequence_protocol_and_tensors():
    ds = YinYangDataset(10, seed=0)
    assert len(ds) == 10
    feats, label = ds[3]
    assert feats.shape == (4,) and label == int(ds.y[3])
    assert ds[-1][1] == int(ds.y[-1])
    with pytest.raises(IndexError):
        ds[10]
    with pytest.raises(TypeError, match="index must be an int"):
        ds[1.0]
    X, y = ds.tensors()
    assert tuple(X.shape) == (10, 4) and str(y.dtype) == "torch.int64"
    assert "class_counts" in repr(ds)


@pytest.mark.parametrize(
    "kw, err, match",
    [
        (dict(size=0), ValueError, "size"),
        (dict(size=2.5), TypeError, "size"),
        (dict(size=10, r_small=0.0), ValueError, "r_small"),
        (dict(size=10, r_big=-1.0), ValueError, "r_big"),
        (dict(size=10, r_small=0.3), ValueError, "r_small must be < r_big / 2"),
        (dict(size=10, seed=-1), ValueError, "seed"),
    ],
)
def test_validation(kw, err, match):
    with pytest.raises(err, match=match):
        YinYangDataset(**kw)
