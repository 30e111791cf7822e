"""Large language models: post-training methods and analyses, run on tiny LMs and SmolLM2.

The paper folders live below (``geode.llm.bvpo``, ``geode.llm.bytedistill``, ``geode.llm.captrack``,
``geode.llm.cd_scaling``, ``geode.llm.sr_grpo``); each paper's public names are re-exported here.
"""

from __future__ import annotations

from geode.llm import bvpo as _bvpo
from geode.llm import bytedistill as _bytedistill
from geode.llm import captrack as _captrack
from geode.llm import cd_scaling as _cd_scaling
from geode.llm import sr_grpo as _sr_grpo
from geode.llm.bvpo import *  # noqa: F403
from geode.llm.bytedistill import *  # noqa: F403
from geode.llm.captrack import *  # noqa: F403
from geode.llm.cd_scaling import *  # noqa: F403
from geode.llm.sr_grpo import *  # noqa: F403

__all__: list[str] = []
# every paper's public names, re-exported (ARCHITECTURE.md: public names)
__all__ += [*_bvpo.__all__, *_bytedistill.__all__, *_captrack.__all__, *_cd_scaling.__all__, *_sr_grpo.__all__]
