"""The process the language server's static audits run in.

A thread is not enough: `ast.parse` holds the GIL for as long as it takes, about a second for a 40,000-line
file on a small machine, and every request waits that long. In a process of its own, an audit never stops the
server from answering, and what it allocates can be bounded. One warm worker (started with `spawn`, so it
shares nothing with the server's threads) serves every document; if it dies, the next audit starts another.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from verifier.audit.config import AuditConfig
from verifier.audit.engine import SourceAudit, audit

MEMORY_LIMIT = 4 * 2**30  # address space of the worker: a pathological file fails its audit, not the machine


class AuditError(Exception):
    """The audit of a document could not run to the end; the message says why."""


class AuditProcess:
    """Runs `verifier.audit.engine.audit` in a worker process, one audit at a time."""

    def __init__(self, memory_limit: int = MEMORY_LIMIT) -> None:
        self.memory_limit = memory_limit
        self._executor: ProcessPoolExecutor | None = None

    async def audit(self, source: str, path: str, config: AuditConfig) -> SourceAudit:
        """The static findings of `source`; AuditError when the worker dies on it (it is started again)."""
        loop = asyncio.get_running_loop()
        executor = self._started()
        try:
            return await loop.run_in_executor(executor, audit, source, path, config)
        except BrokenProcessPool as exc:
            self._executor = None
            executor.shutdown(wait=False, cancel_futures=True)
            raise AuditError(f"the audit of {path} stopped its worker process (out of memory?)") from exc
        except MemoryError as exc:
            raise AuditError(f"the audit of {path} needed more than {self.memory_limit // 2**20} MiB") from exc

    def start(self) -> None:
        """Start the worker and its imports now, in the background, instead of on the first audit."""
        self._started().submit(_ready)

    def stop(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def _started(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_limit_memory,
                initargs=(self.memory_limit,),
            )
        return self._executor


def _ready() -> None:
    """Nothing: submitting it starts the worker, which imports this module and the audit engine."""


def _limit_memory(limit: int) -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass  # no such limit here (not Linux) or a lower one already: the audit's time budget still holds
