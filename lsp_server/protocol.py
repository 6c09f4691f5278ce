"""Where pygls 2.1 falls short, patched in one place (docs/ARCHITECTURE.md, "Language server").

- `$/cancelRequest` for a running `workspace/executeCommand` is answered by pygls but does not stop the
  command's coroutine: the protocol here cancels the task registered for that request.
- A request whose params do not fit its method is dropped by pygls without an answer: here it gets a
  JSON-RPC error response (-32602), and a message that is not JSON gets a parse error (-32700), never a
  pop-up in the editor.
- pygls answers a handler's failure with its Python traceback in the error's data: here the answer is one
  message, and the traceback stays in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol


class _Answered(Exception):
    """A request whose params did not fit its method; the error response has been sent already."""


class TritonizeProtocol(LanguageServerProtocol):
    """pygls's protocol, with cancellation that reaches commands and answers for malformed requests."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.running: dict[Any, asyncio.Task] = {}

    @contextlib.contextmanager
    def cancellable(self) -> Iterator[None]:
        """While inside, `$/cancelRequest` for the request being handled cancels the current task."""
        msg_id = self.msg_id
        self.running[msg_id] = asyncio.current_task()
        try:
            yield
        finally:
            self.running.pop(msg_id, None)

    def _handle_cancel_notification(self, msg_id):
        super()._handle_cancel_notification(msg_id)
        task = self.running.get(msg_id)
        if task is not None:
            task.cancel()

    def _send_response(self, msg_id, result=None, error=None):
        """Errors go out as one readable message: pygls puts the handler's Python traceback in the error's data,
        which editors show as is; it stays in the server's log."""
        if error is not None and isinstance(error.data, dict) and "traceback" in error.data:
            message = f"tritonize's language server failed on this request: {error.message.strip()} (see its log)"
            error = types.ResponseError(code=error.code, message=message)
        super()._send_response(msg_id, result=result, error=error)

    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "id" in data and "method" in data:
                error = types.ResponseError(code=exc.code, message=f"{exc.message}: bad params for {data['method']}")
                self._send_response(data["id"], error=error)
                raise _Answered(data["method"]) from exc
            raise


class PatchedLanguageServer(LanguageServer):
    """A pygls server on `TritonizeProtocol` that answers malformed input on the wire."""

    protocol: TritonizeProtocol

    def __init__(self, name: str, version: str) -> None:
        super().__init__(name, version, protocol_cls=TritonizeProtocol)

    def report_server_error(self, error: Exception, source) -> None:
        if isinstance(error, _Answered):
            return
        if isinstance(error, json.JSONDecodeError):
            self.protocol._send_response(None, error=types.ResponseError(code=-32700, message=f"Parse error: {error}"))
            return
        super().report_server_error(error, source)
