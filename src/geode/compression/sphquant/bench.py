"""Benchmark of SPHQuant: GEMV (batch 1 decode) in the packed SPHQuant format against fp32 dense and int4 RTN.

Each side multiplies one activation vector by a square weight in its storage format: the fp32 dense
``nn.Linear``; :class:`geode.compression.PackedLinear` at 4 bits per group of 128 (bit-packed codes,
16-bit scale and zero); :class:`geode.compression.SPHLinear` at W3 (sign byte + 16-bit code per 8 weights,
3.125 bits per weight, ``k = b_rho = 8``). int4 RTN dequantises the whole weight and then multiplies.
SPHLinear at batch 1 decodes inside the product without materialising the weight (issue 44): per input
8-block a table of the 16 sign patterns of each half-block times the 256 codewords (one small matmul), then
two table look-ups per weight vector at indices computed from the sign byte and joint code, the radius and
the group scales (see :meth:`geode.compression.SPHLinear.forward`); more than 4 rows dequantise and
multiply as before. Both are torch references on CPU, not the paper's fused shared-memory GPU kernel
(future work), so the ratios measure the decode cost of the format in torch operations, not the +30.3%
decode throughput the paper reports on an edge GPU. Sizes: ``smoke`` 256x256, ``quick`` 1024x1024,
``full`` 4096x4096.
"""

from __future__ import annotations

from typing import Any

from geode.claims.bench import BenchCase, Target, relative_error_at_most

__all__ = ["cases"]

_SIZES = {"smoke": 256, "quick": 1024, "full": 4096}


def cases(size: str) -> list[BenchCase]:
    """One GEMV per side on a random square weight."""
    import torch
    from torch import nn

    from geode.compression import PackedLinear, SPHLinear, sph_encode

    n = _SIZES[size]
    g = torch.Generator().manual_seed(0)
    dense = nn.Linear(n, n, bias=False)
    with torch.no_grad():
        dense.weight.copy_(torch.randn(n, n, generator=g) / n**0.5)
    cb = torch.randn(256, 8, generator=g).abs()
    cb = cb / cb.norm(dim=1, keepdim=True)
    sph = SPHLinear(sph_encode(dense.weight, cb, radius_bits=8, group_size=128), cb, direction_bits=8, radius_bits=8)
    int4 = PackedLinear.from_linear(dense, bits=4, group_size=128)
    x = torch.randn(1, n, generator=g)

    def call(layer: Any) -> Any:
        def f() -> Any:
            with torch.no_grad():
                return layer(x)

        return f

    return [
        BenchCase(
            f"GEMV {n}x{n}, batch 1: SPHQuant W3 ({sph.storage_bytes()} B) vs fp32 dense ({4 * n * n} B) and int4 "
            f"RTN g128 ({int4.storage_bytes()} B)",
            candidate=call(sph),
            target=Target("ratio", ">=", 0.3, "issue 44: GEMV >= 0.3x dense fp32 at batch 1", baseline="fp32 dense"),
            baselines={"fp32 dense": call(dense), "int4 RTN g128": call(int4)},
            compare=relative_error_at_most(0.6),  # the same GEMV, up to each format's quantisation error (W3 ~0.4)
        )
    ]
