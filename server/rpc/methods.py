"""The JSON-RPC methods of kdd over an :class:`~kdd.core.engine.Engine`: parameters checked, results as the engine gives them.

``kdd compile``/``kdd check`` call :func:`call` in-process, and ``kdd serve``
calls it for every request, so a script gets the same objects either way.
Every method takes the config as ``{"path": FILE}`` (read by the server) or
``{"text": TEXT}`` (``path`` then only names it, for ``extends`` and
messages).

- ``kdd/compile``: ``emit`` (list or comma-separated string; default
  ``["ir"]``), ``shape``, ``target`` -> the ``kdd compile --json`` object
- ``kdd/check``: ``shape``, ``stage`` (``build``, a pass, ``final``; default
  ``[check] stage``),
  ``bisect``, ``unbounded`` (past the interpreter's size bound), ``target`` -> the
  ``kdd check --json`` object
- ``kdd/passes``: ``shape``, ``target`` -> ``{"ok", "passes": [{name, changed,
  ms, nodes, cached}], "build": {nodes}}``
- ``kdd/irAfterPass``: ``pass``, ``diff`` -> ``{"ok", "pass", "text",
  "lines", "diff"?}``
- ``kdd/stats``: ``{}`` -> what the engine ran and its caches
"""
from __future__ import annotations

from typing import Any, Callable

# JSON-RPC 2.0 error codes.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603


class RpcError(Exception):
    """A request that cannot be answered: a JSON-RPC error code and a message saying why."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def to_dict(self) -> dict:
        return {"code": self.code, "message": self.message}


_TYPES = {"path": str, "text": str, "shape": str, "target": str, "stage": str, "pass": str, "bisect": bool,
          "diff": bool, "unbounded": bool, "emit": (str, list)}


def _params(method: str, params: Any, allowed: tuple[str, ...], source: bool = True) -> dict:
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, f"{method}: params must be an object")
    unknown = sorted(set(params) - set(allowed) - ({"path", "text"} if source else set()))
    if unknown:
        raise RpcError(INVALID_PARAMS, f"{method}: unknown parameter(s) {', '.join(unknown)} "
                                       f"(takes: {', '.join(sorted(set(allowed) | {'path', 'text'}))})")
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


def _compile(engine, params):
    p = _params("kdd/compile", params, ("emit", "shape", "target"))
    source, failure = _source(engine, p)
    return failure or engine.compile(source, p.get("emit") or "ir", p.get("shape"), p.get("target"))


def _check(engine, params):
    p = _params("kdd/check", params, ("shape", "stage", "bisect", "unbounded", "target"))
    source, failure = _source(engine, p)
    return failure or engine.check(source, p.get("shape"), p.get("stage"), bool(p.get("bisect")),
                                   bool(p.get("unbounded")), p.get("target"))


def _passes(engine, params):
    p = _params("kdd/passes", params, ("shape", "target"))
    source, failure = _source(engine, p)
    if failure:
        return failure
    out = engine.compile(source, "passes", p.get("shape"), p.get("target"))
    if not out["ok"]:
        return out
    trace = out["trace"]
    return {"ok": True, "build": {"nodes": trace["build"]["nodes"]},
            "passes": [{k: e[k] for k in ("name", "changed", "ms", "nodes", "cached")} for e in trace["passes"]]}


def _ir_after(engine, params):
    from kdd.core.engine import FINAL

    p = _params("kdd/irAfterPass", params, ("pass", "diff", "shape", "target"))
    source, failure = _source(engine, p)
    return failure or engine.ir_view(source, p.get("pass") or FINAL, bool(p.get("diff")), p.get("shape"),
                                     p.get("target"))


def _stats(engine, params):
    _params("kdd/stats", params, (), source=False)
    return engine.stats()


METHODS: dict[str, Callable[[Any, Any], Any]] = {
    "kdd/compile": _compile,
    "kdd/check": _check,
    "kdd/passes": _passes,
    "kdd/irAfterPass": _ir_after,
    "kdd/stats": _stats,
}


def call(engine, method: str, params: Any) -> Any:
    """Run ``method`` on ``engine``; raises :class:`RpcError` for an unknown method or bad parameters."""
    fn = METHODS.get(method)
    if fn is None:
        raise RpcError(METHOD_NOT_FOUND, f"unknown method {method!r} (methods: {', '.join(METHODS)}, kdd/shutdown)")
    return fn(engine, params)
