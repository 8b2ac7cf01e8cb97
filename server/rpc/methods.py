"""The JSON-RPC methods of kdd over an :class:`~kdd.core.engine.Engine`: parameters checked, results as
the engine gives them.

``kdd compile``/``kdd check`` call :func:`call` in-process, and ``kdd serve``
calls it for every request, so a script gets the same objects either way.
Every method takes the config as ``{"path": FILE}`` (read by the server) or
``{"text": TEXT}`` (``path`` then only names it, for ``extends`` and
messages).

- ``kdd/compile``: ``emit`` (list or comma-separated string; default
  ``["ir"]``), ``shape``, ``target`` -> the ``kdd compile --json`` object
- ``kdd/check``: ``shape`` (reduced to check size unless ``exact``), ``stage``
  (an IR stage: ``build``, a pass, ``final``; default ``[check] stage``, else the
  code: the engine runs the deepest artifact it can), ``bisect``, ``unbounded``
  (past the check's size bound), ``target`` -> the ``kdd check --json`` object
  (``verdict``: ok, wrong or not-checkable; ``artifact``: asm, ptx or ir)
- ``kdd/passes``: ``shape``, ``target`` -> ``{"ok", "passes": [{name, changed,
  ms, nodes, cached}], "build": {nodes}}``
- ``kdd/irAfterPass``: ``pass``, ``diff`` -> ``{"ok", "pass", "text",
  "lines", "diff"?}``
- ``kdd/asmHover``: ``line`` (0-based, of the assembly listing) -> ``{"ok", "hover": {line, text, doc,
  live, sass, markdown} | null}``: the instruction's documentation and the buffers live there
- ``kdd/check`` with ``device``: the compiled sm_90 kernel run on a CUDA GPU
  against the float64 reference instead of the PTX simulator; ``asm`` asks for
  the default (the code) and is kept for old clients
- ``kdd/bench``: ``shape``, ``runs`` -> the sm_90 kernel of the problem timed on
  a CUDA GPU (median microseconds, TFLOP/s, fraction of the device's peak)
- ``kdd/stats``: ``{}`` -> what the engine ran and its caches
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

# JSON-RPC 2.0 error codes.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601
INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603


class RpcError(Exception):
    """A request that cannot be answered: a JSON-RPC error code and a message saying why."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message}


_TYPES = {"path": str, "text": str, "shape": str, "target": str, "stage": str, "pass": str, "bisect": bool,
          "diff": bool, "unbounded": bool, "device": bool, "asm": bool,
          "exact": bool, "runs": int, "emit": (str, list), "line": int}


def _params(method: str, params: Any, allowed: tuple[str, ...], source: bool) -> dict:
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, f"{method}: params must be an object")
    if not all(isinstance(name, str) for name in params):  # msgpack maps may have any keys
        raise RpcError(INVALID_PARAMS, f"{method}: parameter names must be strings")
    takes = set(allowed) | ({"path", "text"} if source else set())
    unknown = sorted(set(params) - takes)
    if unknown:
        raise RpcError(INVALID_PARAMS, f"{method}: unknown parameter(s) {', '.join(unknown)} "
                                       f"(takes: {', '.join(sorted(takes)) or 'none'})")
    for name, value in params.items():
        if value is not None and not isinstance(value, _TYPES.get(name, object)):
            raise RpcError(INVALID_PARAMS, f"{method}: parameter '{name}' has the wrong type "
                                           f"({type(value).__name__})")
    if source and params.get("text") is None and params.get("path") is None:
        raise RpcError(INVALID_PARAMS, f"{method}: give the config as 'path' or 'text'")
    return params


def _source(engine, params: dict):
    """The config a request names, or the engine's failure object when its file cannot be read."""
    from kdd.core.engine import Source, StageFailed

    if params.get("text") is not None:
        return Source(params["text"], params.get("path")), None
    try:
        return engine.read(params["path"]), None
    except StageFailed as exc:
        from kdd.core.engine.engine import failed
        return None, failed(params["path"], exc.failure, None)


def _compile(engine, source, p):
    return engine.compile(source, p.get("emit") or "ir", p.get("shape"), p.get("target"))


def _check(engine, source, p):
    if p.get("device"):
        return engine.on_device(source, p.get("shape"))
    return engine.check(source, p.get("shape"), p.get("stage"), bool(p.get("bisect")), bool(p.get("unbounded")),
                        p.get("target"), bool(p.get("asm")), bool(p.get("exact")))


def _passes(engine, source, p):
    out = engine.compile(source, "passes", p.get("shape"), p.get("target"))
    if not out["ok"]:
        return out
    trace = out["trace"]
    return {"ok": True, "build": {"nodes": trace["build"]["nodes"]},
            "passes": [{k: e[k] for k in ("name", "changed", "ms", "nodes", "cached")} for e in trace["passes"]]}


def _ir_after(engine, source, p):
    from kdd.core.engine import FINAL

    return engine.ir_view(source, p.get("pass") or FINAL, bool(p.get("diff")), p.get("shape"), p.get("target"))


def _asm_hover(engine, source, p):
    """What the assembly views show over one listing line (``core/codegen/line_hover``): its instruction's
    documentation, the buffers live there, and on sm_90 the SASS of a PTX line."""
    from kdd.core.codegen.line_hover import line_hover

    out = engine.compile(source, "asm", p.get("shape"), p.get("target"))
    if not out["ok"]:
        return out
    return {"ok": True, "hover": line_hover(out["asm"], p.get("line") or 0)}


def _bench(engine, source, p):
    return engine.on_device(source, p.get("shape"), bench=True, runs=p.get("runs") or 50)


def _stats(engine, source, p):
    return engine.stats()


@dataclass(frozen=True)
class Method:
    """A method: the parameters it takes (beside ``path``/``text`` when it reads a config), what runs it
    (``run(engine, source, params)``), and whether its answer depends only on its parameters and the
    config's content (a daemon may then answer it again from a cache)."""

    params: tuple[str, ...]
    run: Callable[[Any, Any, dict], Any]
    reads_config: bool = True
    cacheable: bool = True


METHODS: dict[str, Method] = {
    "kdd/compile": Method(("emit", "shape", "target"), _compile),
    "kdd/check": Method(("shape", "stage", "bisect", "unbounded", "target", "device", "asm", "exact"), _check),
    "kdd/passes": Method(("shape", "target"), _passes),
    "kdd/irAfterPass": Method(("pass", "diff", "shape", "target"), _ir_after),
    "kdd/asmHover": Method(("line", "shape", "target"), _asm_hover),
    "kdd/bench": Method(("shape", "runs"), _bench, cacheable=False),  # a measurement is taken anew
    "kdd/stats": Method((), _stats, reads_config=False, cacheable=False),
}


def validate(method: str, params: Any) -> dict:
    """The checked parameters of a request; raises :class:`RpcError` for an unknown method or bad ones."""
    m = METHODS.get(method)
    if m is None:
        raise RpcError(METHOD_NOT_FOUND, f"unknown method {method!r} (methods: {', '.join(METHODS)}, kdd/shutdown)")
    return _params(method, params, m.params, m.reads_config)


def cacheable(method: str, params: dict) -> bool:
    """Whether the answer to these (validated) parameters may be served again (a device run may not)."""
    return METHODS[method].cacheable and not params.get("device")


def call(engine, method: str, params: Any) -> Any:
    """Run ``method`` on ``engine``; raises :class:`RpcError` for an unknown method or bad parameters."""
    p = validate(method, params)
    m = METHODS[method]
    if not m.reads_config:
        return m.run(engine, None, p)
    source, failure = _source(engine, p)
    return failure or m.run(engine, source, p)
