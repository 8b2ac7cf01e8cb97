"""portBLAS (SYCL-BLAS) GEMM configurations: a ``Gemm_Launcher``'s template arguments as kdd knobs.

* :mod:`.template_args` — C++ template-argument lists with spans
* :mod:`.launcher` — ``parse_launcher``: the arguments by parameter name (seed and current forms)
* :mod:`.binding` — the dispatcher's ``_t_a``, ``_t_b``, ``s_a``, ``s_b``, ``is_beta_zero`` from a problem
* :mod:`.mapping` — ``map_launcher``: the knobs for a problem and a target, step by step
* :mod:`.header` — a backend header's launchers, their conditions, and the dispatch for a problem
"""
from kdd.core.config.errors import ConfigError

from .launcher import Launcher, parse_launcher
from .mapping import Issue, PortblasMapping, Step, map_launcher

KEY = "portblas"


def read_portblas(text: str, problem, target) -> PortblasMapping:
    """The mapping of ``[config] portblas = text`` for ``problem`` on ``target``; a string kdd cannot read,
    or a problem that is no GEMM, is a :class:`ConfigError` (with the span of the offending argument)."""
    launcher = parse_launcher(text)
    if problem.op != "gemm":
        raise ConfigError("portblas configures a GEMM: [problem] op must be \"gemm\"", 0, len(text), KEY)
    return map_launcher(launcher, problem, target)


__all__ = ["KEY", "Issue", "Launcher", "PortblasMapping", "Step", "map_launcher", "parse_launcher", "read_portblas"]
