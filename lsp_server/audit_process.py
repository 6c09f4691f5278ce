"""The process the language server's static audits run in.

A thread is not enough: `ast.parse` holds the GIL for as long as it takes, about a second for a 40,000-line
file on a small machine, and every request waits that long. In a process of its own, an audit never stops the
server from answering, and what it allocates and how long it takes can be bounded. One warm worker
(`python -m lsp_server.audit_process`) serves every document, one audit at a time; requests and results are
length-prefixed pickles on its stdin and stdout. If it dies, the next audit starts another; if it dies during
an audit or overruns its time, that audit fails with a clear error.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import struct
import sys
from pathlib import Path

from verifier.audit import AuditConfig, SourceAudit, audit

MEMORY_LIMIT = 4 * 2**30  # address space of the worker: a pathological file fails its audit, not the machine
SLACK_SECONDS = 30.0  # beyond the audit's own time budget (which the rules check cooperatively) before a kill
HEADER = struct.Struct("<Q")
PACKAGES = Path(__file__).resolve().parent.parent  # the worker starts here, so nothing in the user's folder shadows us


class AuditError(Exception):
    """The audit of a document could not run to the end; the message says why."""


class AuditProcess:
    """Runs `verifier.audit.engine.audit` in a worker process, one audit at a time."""

    def __init__(self, memory_limit: int = MEMORY_LIMIT) -> None:
        self.memory_limit = memory_limit
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    def start(self) -> None:
        """On the loop: start the worker now, in the background, instead of on the first audit."""
        asyncio.get_running_loop().create_task(self._started_alone())

    async def audit(self, source: str, path: str, config: AuditConfig) -> SourceAudit:
        """The static findings of `source`; AuditError when the worker dies on it or overruns (it is killed)."""
        async with self._lock:
            process = await self._started()
            assert process.stdin is not None and process.stdout is not None
            request = pickle.dumps((source, path, config))
            try:
                process.stdin.write(HEADER.pack(len(request)) + request)
                await process.stdin.drain()
                reply = await asyncio.wait_for(_read(process.stdout), config.time_budget + SLACK_SECONDS)
            except (asyncio.IncompleteReadError, ConnectionError) as exc:
                await self._kill()
                raise AuditError(f"the audit of {path} stopped its worker process (out of memory?)") from exc
            except asyncio.TimeoutError as exc:
                await self._kill()
                raise AuditError(
                    f"the audit of {path} took longer than {config.time_budget + SLACK_SECONDS:g} s"
                ) from exc
            except BaseException:
                await self._kill()  # cancelled mid-request: the reply would be read as the next one's
                raise
        outcome, value = pickle.loads(reply)
        if outcome != "ok":
            raise AuditError(f"the audit of {path} failed: {value}")
        return value

    @property
    def worker_pid(self) -> int | None:
        """The worker's process id while it runs."""
        running = self._process is not None and self._process.returncode is None
        return self._process.pid if running else None

    async def close(self) -> None:
        """Stop the worker (it also ends by itself when the server exits: its stdin closes)."""
        await self._kill()

    async def _started_alone(self) -> None:
        async with self._lock:
            await self._started()

    async def _started(self) -> asyncio.subprocess.Process:
        if self._process is None or self._process.returncode is not None:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "lsp_server.audit_process",
                str(self.memory_limit),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                cwd=PACKAGES,
            )
        return self._process

    async def _kill(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


async def _read(stream: asyncio.StreamReader) -> bytes:
    (size,) = HEADER.unpack(await stream.readexactly(HEADER.size))
    return await stream.readexactly(size)


def serve(memory_limit: int) -> None:
    """The worker: audit each request from stdin, answer on stdout, until stdin closes."""
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    while header := requests.read(HEADER.size):
        (size,) = HEADER.unpack(header)
        source, path, config = pickle.loads(requests.read(size))
        try:
            reply = pickle.dumps(("ok", audit(source, path, config)))
        except Exception as exc:  # reported to the server, which tells the user; the worker serves on
            reply = pickle.dumps(("error", f"{type(exc).__name__}: {exc}"))
        replies.write(HEADER.pack(len(reply)) + reply)
        replies.flush()


if __name__ == "__main__":
    serve(int(sys.argv[1]))
