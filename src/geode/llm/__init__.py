"""Large language models: post-training methods and analyses, run on tiny LMs and SmolLM2.

The paper folders live below (``geode.llm.bvpo``, ``geode.llm.bytedistill``, ``geode.llm.captrack``,
``geode.llm.cd_scaling``, ``geode.llm.compose``, ``geode.llm.cpa``, ``geode.llm.sr_grpo``); each paper's public
names are re-exported here. Field-level baselines: ``geode.llm.preference`` (the DPO loss) and ``geode.llm.grpo``
(a compact GRPO: sampling, response log-probabilities, group advantages, the clipped surrogate, shared by SR-GRPO
and CPA).
"""

from __future__ import annotations

from geode.llm import bvpo as _bvpo
from geode.llm import bytedistill as _bytedistill
from geode.llm import captrack as _captrack
from geode.llm import cd_scaling as _cd_scaling
from geode.llm import compose as _compose
from geode.llm import cpa as _cpa
from geode.llm import sr_grpo as _sr_grpo
from geode.llm.bvpo import *  # noqa: F403
from geode.llm.bytedistill import *  # noqa: F403
from geode.llm.captrack import *  # noqa: F403
from geode.llm.cd_scaling import *  # noqa: F403
from geode.llm.compose import *  # noqa: F403
from geode.llm.cpa import *  # noqa: F403
from geode.llm.sr_grpo import *  # noqa: F403

__all__: list[str] = []
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [
    *_bvpo.__all__,
    *_bytedistill.__all__,
    *_captrack.__all__,
    *_cd_scaling.__all__,
    *_compose.__all__,
    *_cpa.__all__,
    *_sr_grpo.__all__,
]
