"""The model server's HTTP API as the language server uses it: health, verify, streamed convert (the contract
is `model_server/api.py`; docs/ARCHITECTURE.md, "The HTTP API").

Every failure becomes one `ModelServerError` whose message a user can act on (unreachable, refused, bad
token, busy); closing the convert stream early is how a cancelled conversion stops on the server too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from lsp_server.errors import ModelServerError


class ModelClient:
    def __init__(self, base_url: str, token: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=httpx.Timeout(10.0))

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def healthy(self) -> bool:
        try:
            response = await self._http.get("/health", timeout=2.0)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    async def verify(
        self, task: str, candidate: str, trials: int = 5, policy: str = "strict", dynamic: str | None = None
    ) -> dict[str, Any]:
        body = {"task": task, "candidate": candidate, "trials": trials, "policy": policy}
        if dynamic is not None:
            body["dynamic"] = dynamic
        try:
            response = await self._http.post("/v1/verify", json=body, timeout=None)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        self._check(response)
        return response.json()

    async def convert(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """The conversion's events, in order; leaving the loop early closes the stream (the server stops)."""
        try:
            async with self._http.stream("POST", "/v1/convert", json=body, timeout=httpx.Timeout(None)) as response:
                if response.status_code != 200:
                    await response.aread()
                    self._check(response)
                async for event in _server_sent_events(response.aiter_lines()):
                    yield event
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc

    def _unreachable(self, exc: httpx.HTTPError) -> ModelServerError:
        return ModelServerError(
            f"the model server at {self.base_url} is not reachable ({type(exc).__name__}); start it with "
            "`tritonize serve` or set tritonize.autoStart / tritonize.serverUrl"
        )

    def _check(self, response: httpx.Response) -> None:
        if response.status_code == 200:
            return
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        if response.status_code == 401:
            detail = f"{detail} (set tritonize.token to the server's --token)"
        raise ModelServerError(f"the model server at {self.base_url} answered {response.status_code}: {detail}")


async def _server_sent_events(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    data: list[str] = []
    async for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            yield json.loads("\n".join(data))
            data = []
    if data:
        yield json.loads("\n".join(data))
