"""pygls's protocol, answering the requests it would otherwise leave without a reply.

pygls drops a request whose params fail validation (``character: -1``,
``line: 2**31``) after logging it, and ignores every request that follows
``shutdown``; an editor waiting on either waits forever. Here the first is
answered -32602 naming the method and the reason, the second -32600 ("the
server is shut down"); ``exit`` still ends the server.
"""
from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol


@dataclass
class _Refused:
    """A request that could not be read: its id and the error it is answered with."""

    id: object
    error: JsonRpcException


def _request_id(data) -> object | None:
    rid = data.get("id") if isinstance(data, dict) and "method" in data else None
    return rid if isinstance(rid, (int, str)) and not isinstance(rid, bool) else None


class KddProtocol(LanguageServerProtocol):
    """Every request gets a response, even one pygls cannot structure or one after ``shutdown``."""

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            rid = _request_id(data)
            if rid is None:
                raise
            cause = str(exc.__cause__ or exc).splitlines()[0][:200]
            return _Refused(rid, JsonRpcInvalidParams(f"{data['method']}: invalid params ({cause})"))

    def handle_message(self, message):
        if isinstance(message, _Refused):
            self._send_response(message.id, None, message.error.to_response_error())
            return
        method = getattr(message, "method", None)
        if self._shutdown and method not in (None, lsp.EXIT) and getattr(message, "id", None) is not None:
            self._send_response(message.id, None, JsonRpcInvalidRequest(
                f"{method}: the server is shut down (only 'exit' is accepted)").to_response_error())
            return
        super().handle_message(message)
