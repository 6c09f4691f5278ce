"""The language server's audit worker: a real process, killed, starved and overrun for real."""

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator

import pytest

from lsp_server import audit_process
from lsp_server.audit_process import AuditError, AuditProcess
from tests.verifier.audit.worst_cases import many_kernels
from verifier.audit.config import AuditConfig

KERNEL = """import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs))
"""


def _rules(result) -> set[str]:
    return {finding.rule for finding in result.findings}


@contextlib.asynccontextmanager
async def _running(**options) -> AsyncIterator[AuditProcess]:
    auditor = AuditProcess(**options)
    try:
        yield auditor
    finally:
        await auditor.close()


async def _serves_with_a_new_worker(auditor: AuditProcess, old: int | None) -> None:
    assert "TRI201" in _rules(await auditor.audit(KERNEL, "k.py", AuditConfig()))
    assert auditor.worker_pid not in (None, old)


@pytest.mark.asyncio
async def test_findings_come_back_from_the_worker_process():
    async with _running() as auditor:
        result = await auditor.audit(KERNEL, "k.py", AuditConfig())
        assert "TRI201" in _rules(result)  # the unmasked load and store
        assert [kernel.name for kernel in result.kernels] == ["k"]
        assert auditor.worker_pid not in (None, os.getpid())
    assert auditor.worker_pid is None


@pytest.mark.asyncio
async def test_a_worker_killed_during_an_audit_fails_that_audit_clearly_and_the_next_gets_a_new_one():
    async with _running() as auditor:
        await auditor.audit(KERNEL, "k.py", AuditConfig())
        first = auditor.worker_pid
        slow = asyncio.ensure_future(auditor.audit(many_kernels(6000), "slow.py", AuditConfig(time_budget=60)))
        await asyncio.sleep(0.3)  # parsing 42,000 lines takes over a second
        os.kill(first, signal.SIGKILL)
        with pytest.raises(AuditError, match="stopped its worker process"):
            await slow
        await _serves_with_a_new_worker(auditor, first)


@pytest.mark.asyncio
async def test_a_worker_that_died_between_audits_is_replaced_without_an_error():
    async with _running() as auditor:
        await auditor.audit(KERNEL, "k.py", AuditConfig())
        first = auditor.worker_pid
        os.kill(first, signal.SIGKILL)
        await asyncio.sleep(0.3)
        await _serves_with_a_new_worker(auditor, first)


@pytest.mark.asyncio
async def test_a_file_past_the_memory_limit_is_a_finding_and_the_worker_lives_on():
    huge = KERNEL + "\n".join(f"v{i} = [{', '.join(['1'] * 200)}]" for i in range(20000))  # a 4 GB syntax tree
    async with _running(memory_limit=600 * 2**20) as auditor:
        result = await auditor.audit(huge, "huge.py", AuditConfig())
        assert [(f.rule, "MemoryError" in f.message) for f in result.findings] == [("TRI001", True)]
        assert "TRI201" in _rules(await auditor.audit(KERNEL, "k.py", AuditConfig()))


@pytest.mark.asyncio
async def test_an_audit_past_its_time_is_killed_and_the_next_one_runs(monkeypatch):
    """Parsing 42,000 lines takes over a second; with no slack beyond a 0.1 s budget the worker is killed."""
    monkeypatch.setattr(audit_process, "SLACK_SECONDS", 0.0)
    async with _running() as auditor:
        await auditor.audit(KERNEL, "k.py", AuditConfig())  # started and warm
        first = auditor.worker_pid
        with pytest.raises(AuditError, match=r"took longer than 0\.1 s"):
            await auditor.audit(many_kernels(6000), "slow.py", AuditConfig(time_budget=0.1))
        await _serves_with_a_new_worker(auditor, first)
