"""A local Hugging Face model (directory or hub id) sampled with `transformers`: small models, and CPU use."""

from __future__ import annotations

import copy
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from model_server.backends import static_generation
from model_server.backends.base import BackendError
from model_server.backends.text import TextBackend, check_profile

# A generate call waits for the callers of one burst (an evaluation's tasks, queued by many threads at once) until
# none has joined for GATHER_QUIET_S or the batch is full, GATHER_MAX_S at most: else the first caller's call
# would serve it alone, and the rest would wait a whole call for the next (on a GPU, a full static-cache batch
# decoded for one task). A lone request waits GATHER_QUIET_S.
GATHER_QUIET_S = 0.25
GATHER_MAX_S = 5.0
# The weights' dtype while sampling. `auto` samples a float32 checkpoint (what a full fine-tune saves) in bfloat16 on
# a GPU, as GRPO's rollout samples it during training: float32 decoding moves twice the bytes (a 240-row static cache
# of a 135M model took 24-29 GB) and leaves the tensor cores idle; any other checkpoint, and any on a CPU, as saved.
DTYPES = ("auto", "float32", "bfloat16", "float16")
DTYPE_HELP = (
    "transformers: the weights' dtype while sampling: auto (a float32 checkpoint in bfloat16 on a GPU, as GRPO samples "
    "it; else as saved), float32, bfloat16 or float16"
)
AUTO_GPU_DTYPE = "bfloat16"


@dataclass(eq=False)
class _Request:
    """One caller's prompt, waiting to be generated in a batch with those of other callers."""

    input_ids: list[int]
    n: int
    settings: tuple[int, float]  # max new tokens, temperature: requests batched together share them
    queued: float = field(default_factory=time.monotonic)
    replies: list[str] = field(default_factory=list)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class TransformersBackend(TextBackend):
    """Samples candidates from a causal LM through its chat template (or a raw prompt for `kernelllm`).

    Requests that arrive while the model is busy (several tasks of an evaluation, several editors on one server)
    wait, and the next `generate` call serves all those with the same settings at once, up to `batch` sequences:
    a small model's decoding step costs about the same for one sequence as for dozens. With `compile`, a call
    decodes with a static KV cache (`static_generation`), its batch filled up to `batch` rows: compiled on a GPU
    once per prompt-width bucket, the first call of each bucket waiting for the compile."""

    name = "transformers"

    def __init__(
        self,
        model: str | None = None,
        profile: str = "autotriton",
        max_new_tokens: int = 2048,
        temperature: float = 0.8,
        top_p: float = 0.95,
        device: str = "auto",
        batch: int = 32,
        compile: bool = False,
        dtype: str = "auto",
    ):
        if not model:
            raise BackendError("the transformers backend needs --model (a local model directory or a hub id)")
        if dtype not in DTYPES:
            raise BackendError(f"the transformers backend's dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        self.model_id = model
        self.profile = check_profile(profile)
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.batch = batch
        self.compile = compile
        self._lock = threading.Lock()  # one generate call at a time
        self._queue_lock = threading.Lock()
        self._queue: list[_Request] = []
        self.tokenizer, self.model = _load(model, device, dtype)

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
        temperature = self.temperature if temperature is None else temperature
        request = _Request(encoded["input_ids"][0].tolist(), n, (max_tokens or self.max_new_tokens, temperature))
        with self._queue_lock:
            self._queue.append(request)
        while not request.done.is_set():
            with self._lock:
                if not request.done.is_set():
                    self._gather(request.settings)
                    self._generate(self._take(request.settings))
        if request.error is not None:
            raise request.error
        return request.replies

    def _gather(self, settings: tuple[int, float]) -> None:
        """Wait while requests with these settings are still arriving and do not fill a batch yet."""
        started = time.monotonic()
        while time.monotonic() - started < GATHER_MAX_S:
            with self._queue_lock:
                waiting = [request for request in self._queue if request.settings == settings]
            rows = sum(request.n for request in waiting)
            latest = max((request.queued for request in waiting), default=0.0)
            if rows >= self.batch or time.monotonic() - latest >= GATHER_QUIET_S:
                return
            time.sleep(0.01)

    def _take(self, settings: tuple[int, float]) -> list[_Request]:
        """The oldest waiting requests with these settings, up to `batch` sequences (at least one request)."""
        with self._queue_lock:
            taken, rows = [], 0
            for request in self._queue:
                if request.settings == settings and (not taken or rows + request.n <= self.batch):
                    taken.append(request)
                    rows += request.n
            self._queue = [request for request in self._queue if request not in taken]
        return taken

    def _generate(self, requests: list[_Request]) -> None:
        """Sample every request's replies in one `generate` call and hand each caller its own."""
        try:
            replies = self._replies(requests)
        except Exception as exc:  # every waiting caller gets the failure, none waits forever
            for request in requests:
                request.error = exc
                request.done.set()
            return
        for request in requests:
            request.replies, replies = replies[: request.n], replies[request.n :]
            request.done.set()

    def _replies(self, requests: list[_Request]) -> list[str]:
        """The replies to every request in order: the prompts left-padded to one length, each repeated once per
        reply asked for."""
        import torch

        max_new_tokens, temperature = requests[0].settings
        prompts = [request.input_ids for request in requests for _ in range(request.n)]
        pad = static_generation.pad_id(self.tokenizer)
        sampling = {
            "do_sample": temperature > 0,
            "temperature": temperature if temperature > 0 else None,
            "top_p": self.top_p if temperature > 0 else None,
            "max_new_tokens": max_new_tokens,
        }
        if self.compile:
            config = copy.deepcopy(self.model.generation_config)
            config.update(**sampling)
            tokens = static_generation.generate(self.model, prompts, config, pad, rows=self.batch)
            return self.tokenizer.batch_decode(tokens, skip_special_tokens=True)
        width = max(len(ids) for ids in prompts)
        input_ids, mask = static_generation.left_padded(prompts, width, pad, self.model.device)
        with torch.no_grad():
            output = self.model.generate(input_ids=input_ids, attention_mask=mask, pad_token_id=pad, **sampling)
        return self.tokenizer.batch_decode(output[:, width:], skip_special_tokens=True)


def _load(model: str, device: str, dtype: str):
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise BackendError("the transformers backend needs `pip install transformers`") from exc
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    where = "directory" if Path(model).is_dir() else "hub id"
    # huggingface_hub reads HF_HUB_OFFLINE once, at import; read here, it also holds when set later, and an
    # offline machine is told at once instead of after a minute of retries
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
    try:
        tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=offline)
        loaded = AutoModelForCausalLM.from_pretrained(model, dtype="auto", local_files_only=offline)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BackendError(f"cannot load model {where} `{model}`: {first}") from exc
    if dtype != "auto":
        loaded = loaded.to(getattr(torch, dtype))
    elif device == "cuda" and loaded.dtype == torch.float32:
        loaded = loaded.to(getattr(torch, AUTO_GPU_DTYPE))
    return tokenizer, loaded.to(device).eval()
