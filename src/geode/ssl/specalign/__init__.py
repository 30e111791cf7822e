"""SpecAlign: characteristic-function alignment of two frozen unimodal encoders with few pairs."""

from __future__ import annotations

from geode.ssl.specalign.loss import SDRSampler, SpecAlignLoss, cf_discrepancy, info_nce, rbf_mmd2, structure_reg

__all__ = ["SDRSampler", "SpecAlignLoss", "cf_discrepancy", "info_nce", "rbf_mmd2", "structure_reg"]
