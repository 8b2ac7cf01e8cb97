"""Kernel parameters: knobs, the oneDNN config line, defaults, tiling, validation, budgets.

* :mod:`.knobs` — ``KNOBS``: every knob once (TOML key, oneDNN key, kind, docs)
* :mod:`.kernel_config` — ``KernelConfig`` and its oneDNN line (``config.line(defaults)``)
* :mod:`.tiles` — ``Tile``: ``mb32oc32ic16``
* :mod:`.values` — ``Buffering`` (``s=``/``p=``), ``Pipeline`` (``P=``), ``Subtiles`` (``S=``)
* :mod:`.line` — ``parse_config_line``
* :mod:`.mapping` — ``config_from_mapping``: the ``[config]`` table
* :mod:`.defaults` — ``default_config``, ``resolve_config``: the heuristic
* :mod:`.tiling` — ``derive_tiling``: per-thread/per-group tiles and grids
* :mod:`.budget` — ``estimate_budget``: registers and SLM with formulas
* :mod:`.validate` — ``validate_config``: ``ConfigIssue`` list
* :mod:`.errors` — ``ConfigError``: bad input, with a span
"""
from .budget import Budget, BudgetLine, estimate_budget
from .defaults import default_config, resolve_config
from .errors import ConfigError
from .issues import ConfigIssue
from .kernel_config import KernelConfig
from .knobs import KNOB_BY_KEY, KNOBS, LINE_KEYS, Knob
from .line import parse_config_line
from .mapping import TOML_KEYS, config_from_mapping
from .operands import Operands, operands
from .tiles import Tile
from .tiling import DimTiling, Tiling, derive_tiling
from .validate import validate_config
from .values import Buffering, Pipeline, Subtiles, WalkOrder

__all__ = [
    "Budget", "BudgetLine", "Buffering", "ConfigError", "ConfigIssue", "DimTiling", "KNOBS", "KNOB_BY_KEY",
    "KernelConfig", "Knob", "LINE_KEYS", "Operands", "Pipeline", "Subtiles", "TOML_KEYS", "Tile", "Tiling", "WalkOrder",
    "config_from_mapping", "default_config", "derive_tiling", "estimate_budget", "operands",
    "parse_config_line", "resolve_config", "validate_config",
]
