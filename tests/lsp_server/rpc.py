"""A bare JSON-RPC client over the server's stdio, for what pytest-lsp cannot send: broken frames, bad JSON,
unknown methods, thousands of edits. Requests from the server get neutral answers, like a minimal editor.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any


class RawServer:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lsp_server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.messages: queue.Queue[dict] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self.process.stderr.read, daemon=True).start()

    def send_bytes(self, body: bytes) -> None:
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(json.dumps({"jsonrpc": "2.0", **message}).encode())

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any) -> int:
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait_for(self, match, timeout: float = 30.0) -> dict:
        """The next message for which `match(message)` is true; others are dropped."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no matching message from the server")
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                raise TimeoutError("no matching message from the server") from None
            if match(message):
                return message

    def response(self, request_id: int, timeout: float = 30.0) -> dict:
        return self.wait_for(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    def initialize(self) -> None:
        self.response(self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}}))
        self.notify("initialized", {})

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.response(self.request("shutdown", None), timeout=10)
                self.notify("exit", None)
                self.process.wait(timeout=10)
            except (TimeoutError, OSError, subprocess.TimeoutExpired):
                self.process.kill()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            message = json.loads(stream.read(int(headers["content-length"])))
            if "method" in message and "id" in message:  # a request from the server
                items = (message.get("params") or {}).get("items")
                result = [None] * len(items) if message["method"] == "workspace/configuration" else None
                self.send({"id": message["id"], "result": result})
            self.messages.put(message)
