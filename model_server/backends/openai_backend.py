"""Any OpenAI-compatible upstream (a `vllm serve` cluster, a hosted model, or another tritonize server)."""

from __future__ import annotations

import os

from model_server.backends.base import BackendError
from model_server.backends.text import TextBackend, check_profile


class OpenAIBackend(TextBackend):
    """Samples candidates through `/chat/completions` (or `/completions` for the `kernelllm` profile)."""

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        profile: str = "autotriton",
        max_tokens: int = 2048,
        temperature: float = 0.8,
        timeout: float = 600.0,
    ):
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        if not base_url or not model:
            raise BackendError("the openai backend needs --model and --base-url (or OPENAI_BASE_URL)")
        self.model_id = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.profile = check_profile(profile)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout = timeout

    def _chat(self, messages: list[dict], n: int, max_tokens: int | None, temperature: float | None) -> list[str]:
        body = self._body(n, max_tokens, temperature) | {"messages": messages}
        return [choice["message"]["content"] or "" for choice in self._post("/chat/completions", body)["choices"]]

    def complete(self, prompt: str, n: int = 1, max_tokens: int | None = None, temperature: float | None = None):
        body = self._body(n, max_tokens, temperature) | {"prompt": prompt}
        return [choice["text"] or "" for choice in self._post("/completions", body)["choices"]]

    def _body(self, n: int, max_tokens: int | None, temperature: float | None) -> dict:
        return {
            "model": self.model_id,
            "n": n,
            "max_tokens": max_tokens or self.max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
        }

    def _post(self, path: str, body: dict) -> dict:
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        url = self.base_url + path
        try:
            response = httpx.post(url, json=body, headers=headers, timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise BackendError(f"cannot reach the OpenAI-compatible server at {url}: {exc}") from exc
        if response.status_code >= 400:
            raise BackendError(f"{url} answered {response.status_code}: {response.text[:300]}")
        try:
            return response.json()
        except ValueError as exc:
            raise BackendError(f"{url} did not answer with JSON: {response.text[:200]}") from exc
