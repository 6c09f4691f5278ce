"""The language server's audit worker: a real spawned process, killed and starved for real."""

import asyncio
import multiprocessing
import os
import signal

import pytest

from lsp_server.audit_process import AuditError, AuditProcess
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


@pytest.mark.asyncio
async def test_findings_come_back_from_the_worker_process():
    auditor = AuditProcess()
    try:
        result = await auditor.audit(KERNEL, "k.py", AuditConfig())
        assert "TRI201" in _rules(result)  # the unmasked load and store
        assert [kernel.name for kernel in result.kernels] == ["k"]
        workers = multiprocessing.active_children()
        assert workers and all(worker.pid != os.getpid() for worker in workers)
    finally:
        auditor.stop()


@pytest.mark.asyncio
async def test_a_killed_worker_fails_one_audit_with_a_clear_error_and_the_next_starts_a_new_one():
    auditor = AuditProcess()
    try:
        await auditor.audit(KERNEL, "k.py", AuditConfig())
        for worker in multiprocessing.active_children():
            os.kill(worker.pid, signal.SIGKILL)
        await asyncio.sleep(0.2)
        with pytest.raises(AuditError, match="stopped its worker process"):
            await auditor.audit(KERNEL, "k.py", AuditConfig())
        assert "TRI201" in _rules(await auditor.audit(KERNEL, "k.py", AuditConfig()))
    finally:
        auditor.stop()


@pytest.mark.asyncio
async def test_a_file_past_the_memory_limit_is_a_finding_and_the_worker_lives_on():
    auditor = AuditProcess(memory_limit=600 * 2**20)
    huge = KERNEL + "\n".join(f"v{i} = [{', '.join(['1'] * 200)}]" for i in range(20000))  # a 4 GB syntax tree
    try:
        result = await auditor.audit(huge, "huge.py", AuditConfig())
        assert [(f.rule, "MemoryError" in f.message) for f in result.findings] == [("TRI001", True)]
        assert "TRI201" in _rules(await auditor.audit(KERNEL, "k.py", AuditConfig()))
    finally:
        auditor.stop()
