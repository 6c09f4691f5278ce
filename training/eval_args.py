"""What `python -m training.eval` evaluates, and how: its arguments, checked as they are read."""

from __future__ import annotations

from dataclasses import dataclass, field

from model_server import prompts
from model_server.backends.transformers_backend import DTYPE_HELP, DTYPES
from training import suites, tritonbench
from verifier import DEVICES

MORE_K = (5, 10, 20, 50, 100)  # the k of pass@k reported beside 1 and --samples, where --k names none


@dataclass
class EvalArgs:
    """What `python -m training.eval` evaluates, and how."""

    output_dir: str = field(default="", metadata={"help": "directory for the results, candidates and plot"})
    suite: str = field(
        default="",
        metadata={
            "help": "a directory of KernelBench task modules, an rl.PROFILE.jsonl file, kernelbench:CLONE/levelN, "
            "or tritonbench-t:CLONE / tritonbench-g:CLONE"
        },
    )
    split: str = field(default="test", metadata={"help": "the records of this split, when --suite is a JSONL file"})
    backend: str = field(default="inductor", metadata={"help": "inductor, transformers, vllm or openai"})
    model: str = field(default="", metadata={"help": "model directory or id (transformers, vllm, openai)"})
    profile: str = field(default="autotriton", metadata={"help": "prompt profile: autotriton, kernelllm, chat"})
    base_url: str = field(default="", metadata={"help": "openai: the server's URL (else $OPENAI_BASE_URL)"})
    tensor_parallel: int = field(default=1, metadata={"help": "vllm: GPUs the model is split over"})
    samples: int = field(default=4, metadata={"help": "candidates asked for per task (K)"})
    temperature: float = field(default=0.8, metadata={"help": "sampling temperature of model backends"})
    max_tokens: int = field(default=2048, metadata={"help": "longest reply of model backends, in tokens"})
    k: list[str] = field(
        default_factory=list, metadata={"help": "k of pass@k (none: 1, K, and those of 5 10 20 50 100 below K)"}
    )
    fast_p: list[str] = field(
        default_factory=lambda: ["0", "1", "1.5", "2"], metadata={"help": "speedup thresholds p of fast_p"}
    )
    device: str = field(
        default="auto", metadata={"help": "where the model runs and candidates are verified: auto, cuda or cpu"}
    )
    verify_device: str = field(
        default="",
        metadata={
            "help": "where candidates are verified, when not on --device: cpu verifies in the Triton interpreter "
            "(the GRPO rewards' route) while the model generates on the GPU"
        },
    )
    trials: int = field(default=5, metadata={"help": "verification trials per candidate"})
    timeout: float = field(default=120.0, metadata={"help": "seconds per verification run"})
    timing: bool = field(default=True, metadata={"help": "time correct candidates against eager and torch.compile"})
    workers: int = field(default=2, metadata={"help": "candidates verified at once"})
    batch: int = field(
        default=32,
        metadata={"help": "transformers: sequences sampled in one generate call (the samples of several tasks)"},
    )
    compile: bool = field(
        default=False, metadata={"help": "transformers: decode with a static KV cache, compiled on a GPU"}
    )
    dtype: str = field(default="auto", metadata={"help": DTYPE_HELP})
    tritonbench_instruction: str = field(
        default="simple", metadata={"help": "TritonBench suites: the benchmark's simple or complex instructions"}
    )

    def __post_init__(self) -> None:
        if not self.output_dir:
            raise ValueError("--output-dir is required")
        if not self.suite:
            raise ValueError("--suite is required")
        suites.parse(self.suite)
        if self.profile not in prompts.PROFILES:
            raise ValueError(f"--profile must be one of {', '.join(prompts.PROFILES)}, got {self.profile!r}")
        if self.device not in DEVICES:
            raise ValueError(f"--device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.verify_device and self.verify_device not in DEVICES:
            raise ValueError(f"--verify-device must be one of {', '.join(DEVICES)}, got {self.verify_device!r}")
        if self.tritonbench_instruction not in tritonbench.INSTRUCTIONS:
            kinds = " or ".join(tritonbench.INSTRUCTIONS)
            raise ValueError(f"--tritonbench-instruction must be {kinds}, got {self.tritonbench_instruction!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"--dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if min(self.samples, self.trials, self.workers, self.tensor_parallel, self.max_tokens, self.batch) < 1:
            raise ValueError(
                "--samples, --trials, --workers, --tensor-parallel, --max-tokens and --batch must be at least 1"
            )
        if self.timeout <= 0 or self.temperature < 0:
            raise ValueError("--timeout must be positive and --temperature at least 0")
        self.k = [str(k) for k in self.k]
        self.fast_p = [str(p) for p in self.fast_p]
        try:
            ks, ps = self.ks, self.ps
        except ValueError:
            raise ValueError("--k takes whole numbers and --fast-p numbers") from None
        if any(k < 1 or k > self.samples for k in ks):
            raise ValueError(f"--k values must be between 1 and --samples ({self.samples}), got {self.k}")
        if not ps or any(p < 0 for p in ps):
            raise ValueError(f"--fast-p needs one or more thresholds of at least 0, got {self.fast_p}")

    @property
    def ks(self) -> list[int]:
        """The k of pass@k, ascending."""
        if self.k:
            return sorted({int(k) for k in self.k})
        return sorted({1, self.samples, *(k for k in MORE_K if k <= self.samples)})

    @property
    def ps(self) -> list[float]:
        """The thresholds p of fast_p, ascending."""
        return sorted({float(p) for p in self.fast_p})
