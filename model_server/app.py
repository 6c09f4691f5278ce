"""The model server's HTTP API: health, models, verify, and the streamed conversion loop (the contract, with
its events, is `api.py`; docs/ARCHITECTURE.md, "The HTTP API").

Everything slow (verification, Inductor, model sampling) runs in threads; the event loop only moves
events. A conversion streams Server-Sent Events and stops as soon as the client disconnects. Bodies over the
configured size get 413 (announced or streamed), schema errors 422 naming the field (on /v1/verify and
/v1/convert an unknown field too; the OpenAI-compatible endpoints ignore fields they do not use), an unknown
backend or model 404 listing what exists, and conversions beyond the configured concurrency wait in a bounded
queue, then get 429.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
import typing
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator
from pydantic_core import PydanticCustomError

from model_server import api
from model_server.api import MAX_SOURCE, ConvertRequest
from model_server.backends import BACKENDS, Backend, BackendConfig, BackendError, create_backend
from model_server.loop import ConvertError, convert
from verifier import Task, TaskError, UsageError, VerifierPool, dynamic_positions


@dataclass
class ServerConfig:
    """What the server runs with; `tritonize serve` fills it from flags."""

    backend: BackendConfig = field(default_factory=BackendConfig)
    workers: int | None = None  # verifications at once (None: 4 on a GPU, 2 on a CPU)
    token: str | None = None
    max_body_bytes: int = 1024 * 1024
    max_conversions: int = 2
    max_queued: int = 4
    spares: bool = True  # inductor backend: capture processes started ahead, their imports done


class VerifyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str = Field(min_length=1, max_length=MAX_SOURCE, description="source of a KernelBench task module")
    candidate: str = Field(min_length=1, max_length=MAX_SOURCE, description="source of a ModelNew module")
    trials: int = Field(default=5, ge=1, le=100)
    timeout: float = Field(default=60.0, gt=0, le=3600)
    policy: Literal["strict", "hybrid"] = Field(
        default="strict", description="hybrid: PyTorch may do the work Triton does not; never rewarded"
    )
    sanitize: bool = Field(default=False, description="GPU: also run the candidate under compute-sanitizer memcheck")
    dynamic: str | None = Field(
        default=None,
        max_length=512,
        description="also verify at three other sizes along these dimensions of forward's tensor inputs: `auto`, "
        "`0`, `x:0,y:1` (as `/v1/convert`'s `dynamic`)",
    )


def _body_model(request: type) -> type[BaseModel]:
    """The pydantic model of a request dataclass of `api.py`: its fields, their bounds and descriptions (from
    each field's metadata), unknown fields refused; a field with a `pattern` gets the dataclass's own message."""
    hints = typing.get_type_hints(request)
    fields, validators = {}, {}
    for each in dataclasses.fields(request):
        limits = {key: value for key, value in each.metadata.items() if key != "pattern"}
        default = ... if each.default is dataclasses.MISSING else each.default
        extra = {"pattern": each.metadata["pattern"]} if "pattern" in each.metadata else None
        fields[each.name] = (hints[each.name], Field(default, json_schema_extra=extra, **limits))
        if extra:
            validators[f"_check_{each.name}"] = field_validator(each.name)(_pattern_check(each.name, each.metadata))
    return create_model(
        f"{request.__name__}Body",
        __config__=ConfigDict(extra="forbid"),
        __validators__=validators,
        **fields,
    )


def _pattern_check(name: str, limits: typing.Mapping):
    def check(cls, value: str) -> str:
        problem = api.field_problem(value, limits)
        if problem:
            raise PydanticCustomError("python_identifier", f"{name} {problem}")
        return value

    return classmethod(check)


ConvertBody = _body_model(ConvertRequest)
KNOWN_FIELDS = {"/v1/verify": tuple(VerifyBody.model_fields), "/v1/convert": tuple(ConvertBody.model_fields)}


class CompletionBody(BaseModel):
    """OpenAI's request, of which the fields below are used; OpenAI clients send many more, which are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(max_length=256)
    prompt: str = Field(max_length=MAX_SOURCE)
    n: int = Field(default=1, ge=1, le=64)
    max_tokens: int | None = Field(default=None, ge=1, le=32768)  # None: the backend's --max-tokens
    temperature: float = Field(default=1.0, ge=0, le=2)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str = Field(pattern=r"^(system|user|assistant)$")
    content: str = Field(max_length=MAX_SOURCE)


class ChatBody(BaseModel):
    """OpenAI's chat request; like `CompletionBody`, fields it does not use are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(max_length=256)
    messages: list[ChatMessage] = Field(min_length=1, max_length=64)
    n: int = Field(default=1, ge=1, le=64)
    max_tokens: int | None = Field(default=None, ge=1, le=32768)  # None: the backend's --max-tokens
    temperature: float = Field(default=1.0, ge=0, le=2)


def create_app(config: ServerConfig) -> FastAPI:
    """The FastAPI application; the verifier pool and backend start with it and stop with it."""
    state = _State(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await asyncio.to_thread(state.start)
        try:
            yield
        finally:
            await asyncio.to_thread(state.stop)

    app = FastAPI(title="tritonize model server", version="0.1.0", lifespan=lifespan)
    app.add_middleware(_BodyLimit, limit=config.max_body_bytes)
    app.add_middleware(_BearerToken, token=config.token)
    app.add_exception_handler(RequestValidationError, _validation_error)

    @app.get("/health")
    async def health() -> dict:
        return {
            "status": "ok",
            "backend": state.backend.name,
            "device": state.pool.device,
            "conversions": state.waiting,
        }

    @app.get("/v1/models")
    async def models() -> dict:
        return {
            "object": "list",
            "data": [{"id": model, "object": "model", "owned_by": state.backend.name} for model in state.models()],
        }

    @app.post("/v1/verify")
    async def verify(body: VerifyBody) -> dict:
        try:
            task = Task(body.task)
        except (TaskError, UsageError) as exc:
            raise HTTPException(status_code=400, detail=f"the task does not load: {exc}") from exc
        if body.dynamic is not None:
            try:
                dynamic_positions(body.dynamic, task.tree, task.origin)
            except UsageError as exc:
                raise HTTPException(status_code=400, detail=str(exc)) from exc
        try:
            report = await asyncio.to_thread(
                state.pool.verify,
                task,
                body.candidate,
                trials=body.trials,
                timeout=body.timeout,
                policy=body.policy,
                sanitize=body.sanitize,
                dynamic=body.dynamic,
            )
        except (TaskError, UsageError) as exc:
            raise HTTPException(status_code=400, detail=f"the task does not load: {exc}") from exc
        return report.to_dict()

    @app.post("/v1/completions")
    async def completions(body: CompletionBody) -> dict:
        backend = state.text_backend(body.model)
        texts = await asyncio.to_thread(backend.complete, body.prompt, body.n, body.max_tokens, body.temperature)
        choices = [{"index": i, "text": text, "finish_reason": "stop"} for i, text in enumerate(texts)]
        return _openai_reply("text_completion", body.model, choices)

    @app.post("/v1/chat/completions")
    async def chat_completions(body: ChatBody) -> dict:
        backend = state.text_backend(body.model)
        messages = [m.model_dump() for m in body.messages]
        texts = await asyncio.to_thread(backend.chat, messages, body.n, body.max_tokens, body.temperature)
        choices = [
            {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            for i, text in enumerate(texts)
        ]
        return _openai_reply("chat.completion", body.model, choices)

    @app.post("/v1/convert")
    async def convert_stream(body: ConvertBody, request: Request) -> StreamingResponse:
        backend = state.backend_for(body.backend, body.model)
        if not state.admit():
            raise HTTPException(status_code=429, detail="too many conversions running and queued; retry later")
        return StreamingResponse(_convert_events(state, backend, body, request), media_type="text/event-stream")

    return app


class _State:
    def __init__(self, config: ServerConfig):
        self.config = config
        self.backend: Backend = create_backend(config.backend)
        self.pool: VerifierPool | None = None
        self.running = threading.BoundedSemaphore(config.max_conversions)
        self.waiting = 0
        self.lock = threading.Lock()

    def start(self) -> None:
        self.pool = VerifierPool(size=self.config.workers, device=self.config.backend.device)
        start_spares = getattr(self.backend, "start_spares", None)  # a long-lived process: worth keeping
        if start_spares is not None and self.config.spares:
            start_spares(self.pool.device)

    def stop(self) -> None:
        if self.pool is not None:
            self.pool.close()
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()

    def models(self) -> list[str]:
        return self.backend.models()

    def backend_for(self, name: str | None, model: str | None) -> Backend:
        if name is not None and name != self.backend.name:
            raise HTTPException(
                status_code=404,
                detail=f"backend `{name}` is not served here; this server runs `{self.backend.name}` "
                f"(known backends: {', '.join(BACKENDS)})",
            )
        if model is not None:
            self._check_model(model)
        return self.backend

    def text_backend(self, model: str) -> Backend:
        """The backend, if it generates text and serves `model`; else 404 saying what exists."""
        if not hasattr(self.backend, "chat"):
            raise HTTPException(
                status_code=404,
                detail=f"model `{model}` does not generate text here: the `{self.backend.name}` backend derives "
                "kernels without a language model (text models come with the transformers and openai backends)",
            )
        self._check_model(model)
        return self.backend

    def _check_model(self, model: str) -> None:
        if model not in self.models():
            raise HTTPException(
                status_code=404, detail=f"model `{model}` is not served; available: {', '.join(self.models())}"
            )

    def admit(self) -> bool:
        """Whether a new conversion fits among the running and queued ones."""
        with self.lock:
            return self.waiting < self.config.max_conversions + self.config.max_queued

    def enter(self) -> None:
        """Count a conversion whose stream has started (a stream that never starts is never counted)."""
        with self.lock:
            self.waiting += 1

    def release(self) -> None:
        with self.lock:
            self.waiting -= 1


def _openai_reply(kind: str, model: str, choices: list[dict]) -> dict:
    return {
        "id": f"tritonize-{uuid.uuid4().hex[:12]}",
        "object": kind,
        "created": int(time.time()),
        "model": model,
        "choices": choices,
    }


async def _convert_events(state: _State, backend: Backend, body: ConvertBody, request: Request):
    """The conversion loop in a thread; its events as SSE; the client's disconnect cancels it."""
    queue: asyncio.Queue = asyncio.Queue()
    loop = asyncio.get_running_loop()
    cancel = threading.Event()

    def emit(event: api.Event) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, event)

    def work() -> None:
        try:
            if not state.running.acquire(blocking=False):
                emit(api.queued())
                state.running.acquire()
            try:
                if cancel.is_set():
                    return
                try:
                    convert(ConvertRequest(**body.model_dump()), backend, state.pool, emit, cancelled=cancel.is_set)
                except (TaskError, UsageError) as exc:
                    emit(api.error(f"the task does not load: {exc}"))
            finally:
                state.running.release()
        except (ConvertError, BackendError, ValueError) as exc:
            emit(api.error(str(exc)))
        except Exception as exc:  # the stream must end with an event, never a dropped connection
            emit(api.error(f"internal error: {type(exc).__name__}: {exc}"))
        finally:
            state.release()
            loop.call_soon_threadsafe(queue.put_nowait, None)

    state.enter()
    queue.put_nowait(api.accepted(backend.name, state.pool.device))
    loop.run_in_executor(None, work)
    try:
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), timeout=0.5)
            except asyncio.TimeoutError:
                if await request.is_disconnected():
                    cancel.set()
                    break
                continue
            if event is None:
                break
            yield f"event: {event['event']}\ndata: {json.dumps(event)}\n\n"
    finally:
        cancel.set()  # the thread kills its verification in flight and winds down


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """FastAPI's 422 body (`detail`: one `{type, loc, msg, input}` per problem); an unknown field's message
    also lists the fields the endpoint takes."""
    errors = jsonable_encoder(exc.errors())
    known = KNOWN_FIELDS.get(request.url.path)
    for error in errors:
        if error.get("type") == "extra_forbidden" and known:
            error["msg"] = f"unknown field `{error['loc'][-1]}`; {request.url.path} takes {', '.join(known)}"
    return JSONResponse({"detail": errors}, status_code=422)


class _BodyLimit:
    """413 for bodies over `limit` bytes, whether announced by Content-Length or streamed (chunked)."""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_large = _TooLarge(self.limit)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await _reject(send, too_large.status_code, too_large.detail)
        seen = 0

        async def limited_receive():
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise too_large
            return message

        try:
            await self.app(scope, limited_receive, send)
        except _TooLarge:
            await _reject(send, too_large.status_code, too_large.detail)


class _TooLarge(HTTPException):
    """Raised while the body streams in. An HTTPException, so FastAPI answers it as such (413) rather than as a
    body it could not parse (400); the middleware answers it where FastAPI does not."""

    def __init__(self, limit: int):
        size = f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit} bytes"
        super().__init__(status_code=413, detail=f"request body over the server's limit of {size}")


class _BearerToken:
    """401 unless `Authorization: Bearer <token>` matches, when a token is configured (/health stays open)."""

    def __init__(self, app, token: str | None):
        self.app = app
        self.token = token

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or self.token is None or scope.get("path") == "/health":
            return await self.app(scope, receive, send)
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        if header != f"Bearer {self.token}":
            return await _reject(send, 401, "missing or wrong bearer token")
        return await self.app(scope, receive, send)


async def _reject(send, status: int, detail: str) -> None:
    response = JSONResponse({"detail": detail}, status_code=status)
    await send({"type": "http.response.start", "status": status, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})
