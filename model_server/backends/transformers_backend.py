"""A local Hugging Face model (directory or hub id) sampled with `transformers`: small models, and CPU use."""

from __future__ import annotations

import threading
from pathlib import Path

from model_server.backends.base import BackendError
from model_server.backends.text import TextBackend, check_profile


class TransformersBackend(TextBackend):
    """Samples candidates from a causal LM through its chat template (or a raw prompt for `kernelllm`)."""

    name = "transformers"

    def __init__(
        self,
        model: str | None = None,
        profile: str = "autotriton",
        max_new_tokens: int = 2048,
        temperature: float = 0.8,
        top_p: float = 0.95,
        device: str = "auto",
    ):
        if not model:
            raise BackendError("the transformers backend needs --model (a local model directory or a hub id)")
        self.model_id = model
        self.profile = check_profile(profile)
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self._lock = threading.Lock()
        self.tokenizer, self.model = _load(model, device)

    def _chat(self, messages: list[dict], n: int, max_tokens: int | None, temperature: float | None) -> list[str]:
        return self._sample(self.encode(messages), n, max_tokens, temperature)

    def complete(self, prompt: str, n: int = 1, max_tokens: int | None = None, temperature: float | None = None):
        """`n` sampled continuations of a raw text prompt."""
        return self._sample(self.encode(prompt), n, max_tokens, temperature)

    def encode(self, prompt: list[dict] | str):
        """The token ids the model is given for a conversation (through its chat template, the reply opened) or a
        raw prompt: what training must have shown it for the same prompt."""
        if isinstance(prompt, str):
            return self.tokenizer(prompt, return_tensors="pt")
        return self.tokenizer.apply_chat_template(
            prompt, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )

    def _sample(self, encoded, n: int, max_tokens: int | None, temperature: float | None) -> list[str]:
        import torch

        encoded = {key: value.to(self.model.device) for key, value in encoded.items()}
        temperature = self.temperature if temperature is None else temperature
        with self._lock, torch.no_grad():
            output = self.model.generate(
                **encoded,
                do_sample=temperature > 0,
                temperature=temperature if temperature > 0 else None,
                top_p=self.top_p if temperature > 0 else None,
                max_new_tokens=max_tokens or self.max_new_tokens,
                num_return_sequences=n,
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
            )
        start = encoded["input_ids"].shape[1]
        return [self.tokenizer.decode(sequence[start:], skip_special_tokens=True) for sequence in output]


def _load(model: str, device: str):
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise BackendError("the transformers backend needs `pip install transformers`") from exc
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    where = "directory" if Path(model).is_dir() else "hub id"
    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
        loaded = AutoModelForCausalLM.from_pretrained(model, dtype="auto").to(device).eval()
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BackendError(f"cannot load model {where} `{model}`: {first}") from exc
    return tokenizer, loaded
