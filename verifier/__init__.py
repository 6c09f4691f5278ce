"""The trust core of tritonize: prove a Triton candidate equal to its PyTorch task, and measure it."""

from verifier.findings import Finding
from verifier.options import VerifyOptions
from verifier.pool import VerifierPool
from verifier.report import Report
from verifier.verify import TaskError, UsageError, verify

__all__ = ["Finding", "Report", "TaskError", "UsageError", "VerifierPool", "VerifyOptions", "verify"]
