"""Reinforcement learning on the RL prompts of `training.data`: trl's GRPOTrainer, rewarded by the verifier.

    python -m training.grpo --data DATA --model MODEL --output-dir RUN [--config FILE.yaml] [flags]

Each step samples `--num-generations` replies per prompt of `DATA/rl.PROFILE.jsonl` (its `train` rows), verifies
every reply's module in the verifier's sandbox (strict policy, `--verify-workers` at a time, on this process's GPU
or the CPU's Triton interpreter) and rewards it through `training/rewards.py`: `--reward-correct` for a verified
kernel, `--reward-speedup` times its clipped log2 speedup over eager (GPU only; off by default, as timing each
verified reply alone on the GPU costs about half the reward throughput), `--reward-format` times the share of format
checks it passes, `--reward-runs` where its `forward` ran to the end (its output compared, right or wrong).
Generation uses transformers' `generate` on the training weights; with `--fast-generation`,
a bf16 copy of the policy that decodes with a static KV cache, compiled on a GPU (`training/rollout.py`); or
trl's vLLM integration with `--vllm`.

`--prompts improve` (or `both`) trains on the improve prompts of `training.data --improve`
(`DATA/rl-improve.PROFILE.jsonl`): each shows a verified kernel of the task with its measured time and asks for a
faster one, and `--reward-speedup` then weighs the clipped log2 speedup of a reply over that seed, the seed verified
and timed once in the same run on the same GPU (copying it back earns no speed term). Written to the run directory:

- `config.yaml`: the resolved arguments;
- `log.jsonl`: every log of the trainer (rewards per term, verdict shares, KL, loss), one object a line;
- `rewards.jsonl`: every verified reply's verdict, rules, speedup and message, and the task it answered;
- `steps.jsonl`: each step's seconds, split into generation, reward (verification) and update;
- `checkpoint-N/`: the trainer's checkpoints; a re-run on the same directory resumes from the last one;
- `final/`: the model and its tokenizer, which `transformers` and vLLM load as is (LoRA merged in, unless
  `--no-merge-lora`).

Several GPUs or nodes: `accelerate launch --config_file training/configs/accelerate-ddp.yaml -m training.grpo ...`;
each rank verifies its own replies on its own GPU.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from training import config, runs
from training.data import IMPROVE_RL, records_path
from training.rollout import FastGeneration

if TYPE_CHECKING:
    from datasets import Dataset
    from transformers import TrainerCallback

REWARDS_LOG = "rewards.jsonl"
PROMPT_KINDS = ("convert", "improve", "both")
STEPS_LOG = "steps.jsonl"


@dataclass
class GRPOArgs(runs.RunArgs):
    """What `python -m training.grpo` trains (after the fields every run has: `RunArgs`)."""

    KIND: ClassVar[str] = "rl"
    # redeclared for their defaults (a GRPO step takes seconds to minutes: log each, checkpoint often)
    logging_steps: int = field(default=1, metadata={"help": "log every this many optimizer steps"})
    save_steps: int = field(default=50, metadata={"help": "checkpoint every this many optimizer steps"})

    learning_rate: float = field(default=1e-6, metadata={"help": "learning rate (AdamW)"})
    lr_scheduler: str = field(
        default="linear",
        metadata={
            "help": "learning-rate schedule over --epochs (a --max-minutes stop cuts it short): "
            + ", ".join(runs.SCHEDULERS)
        },
    )
    max_steps: int = field(default=-1, metadata={"help": "stop after this many optimizer steps (-1: run the epochs)"})
    epochs: float = field(default=1.0, metadata={"help": "passes over the train prompts"})
    num_generations: int = field(default=8, metadata={"help": "replies sampled per prompt (the GRPO group)"})
    per_device_batch_size: int = field(
        default=8, metadata={"help": "replies per device in one step (a multiple of --num-generations)"}
    )
    gradient_accumulation: int = field(default=1, metadata={"help": "steps per optimizer update"})
    max_completion_length: int = field(default=1024, metadata={"help": "longest reply, in tokens"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature of the replies"})
    beta: float = field(default=0.0, metadata={"help": "KL penalty against the starting model (0: none, no copy)"})
    prompts: str = field(
        default="convert",
        metadata={
            "help": "which prompts: convert (rl.PROFILE.jsonl: write Triton for this PyTorch), improve "
            "(rl-improve.PROFILE.jsonl from training.data --improve: write a faster kernel than this verified one, "
            "rewarded by the speedup over it; GPU, --reward-speedup above 0) or both"
        },
    )
    reward_correct: float = field(default=1.0, metadata={"help": "weight of the verified-kernel reward"})
    reward_speedup: float = field(
        default=0.0,
        metadata={"help": "weight of the clipped log2 speedup (GPU; above 0, each verified reply is timed)"},
    )
    reward_format: float = field(default=0.1, metadata={"help": "weight of the format checks"})
    reward_runs: float = field(
        default=0.2, metadata={"help": "weight of a reply whose forward runs to the end (its output compared)"}
    )
    scale_rewards: str = field(
        default="group",
        metadata={"help": "advantages divided by the reward std of the group, of the batch, or none"},
    )
    verify_device: str = field(default="auto", metadata={"help": "where replies are verified: auto, cuda or cpu"})
    verify_workers: int = field(default=2, metadata={"help": "replies verified at once (per process)"})
    trials: int = field(default=3, metadata={"help": "verification trials per reply"})
    verify_timeout: float = field(default=60.0, metadata={"help": "seconds per verification run of a reply"})
    fast_generation: bool = field(
        default=False,
        metadata={"help": "generate from a bf16 copy of the policy with a static KV cache, compiled on a GPU"},
    )
    vllm: bool = field(default=False, metadata={"help": "generate with trl's vLLM integration (vLLM installed)"})
    vllm_mode: str = field(
        default="colocate", metadata={"help": "colocate (in the trainer) or server (trl vllm-serve)"}
    )
    vllm_server: str = field(
        default="", metadata={"help": "server mode: the URL of `trl vllm-serve` (none: http://localhost:8000)"}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.num_generations < 2:
            raise ValueError("--num-generations must be at least 2 (GRPO compares replies within a group)")
        if self.per_device_batch_size % self.num_generations:
            raise ValueError(
                f"--per-device-batch-size ({self.per_device_batch_size}) must be a multiple of "
                f"--num-generations ({self.num_generations})"
            )
        counts = (self.gradient_accumulation, self.max_completion_length, self.verify_workers, self.trials)
        if min(counts) < 1:
            raise ValueError(
                "--gradient-accumulation, --max-completion-length, --verify-workers and --trials must be at least 1"
            )
        if self.max_steps == 0 or self.max_steps < -1:
            raise ValueError("--max-steps must be -1 (run the epochs) or at least 1")
        if self.learning_rate <= 0 or self.epochs <= 0 or self.verify_timeout <= 0 or self.temperature <= 0:
            raise ValueError("--learning-rate, --epochs, --verify-timeout and --temperature must be > 0")
        if min(self.beta, self.reward_correct, self.reward_speedup, self.reward_format, self.reward_runs) < 0:
            raise ValueError("--beta and the --reward-* weights must be >= 0")
        if self.prompts not in PROMPT_KINDS:
            raise ValueError(f"--prompts must be one of {', '.join(PROMPT_KINDS)}, got {self.prompts!r}")
        if self.prompts != "convert" and (self.reward_speedup <= 0 or self.verify_device == "cpu"):
            raise ValueError(
                f"--prompts {self.prompts}: an improve prompt is rewarded by its reply's measured speedup over the "
                "kernel it shows, so it needs --reward-speedup above 0 and replies verified on a GPU"
            )
        if self.lr_scheduler not in runs.SCHEDULERS:
            raise ValueError(f"--lr-scheduler must be one of {', '.join(runs.SCHEDULERS)}, got {self.lr_scheduler!r}")
        if self.scale_rewards not in ("group", "batch", "none"):
            raise ValueError(f"--scale-rewards must be group, batch or none, got {self.scale_rewards!r}")
        if self.verify_device not in ("auto", "cuda", "cpu"):
            raise ValueError(f"--verify-device must be auto, cuda or cpu, got {self.verify_device!r}")
        if self.fast_generation and (self.vllm or self.lora):
            raise ValueError("--fast-generation copies a full fine-tune's policy: not with --vllm or --lora")
        if self.vllm_mode not in ("colocate", "server"):
            raise ValueError(f"--vllm-mode must be colocate or server, got {self.vllm_mode!r}")


def main(argv: list[str] | None = None) -> int:
    return config.main(GRPOArgs, train, argv, __doc__, "python -m training.grpo", refused=(runs.TrainingError,))


def train(args: GRPOArgs) -> None:
    """Train with verifier rewards, resuming from the run directory's last checkpoint, and write `final/`."""
    from accelerate import PartialState

    from training.rewards import VerifierRewards
    from verifier import VerifierPool

    state = PartialState()
    out = Path(args.output_dir)
    if state.is_main_process:
        config.announce(args)
        config.save(args, out)
    prompts_rows = load_prompts(args)
    _check_timed(args)
    model, tokenizer = runs.start(args, "training.grpo", prompts_rows[0]["prompt"])
    if args.vllm:
        _check_vllm()
    try:
        pool = VerifierPool(size=args.verify_workers, device=args.verify_device, gpu=_own_gpu(args))
    except ValueError as exc:
        raise runs.TrainingError(f"--verify-device: {exc}") from exc
    log = out / REWARDS_LOG if state.is_main_process else out / f"rewards.rank{state.process_index}.jsonl"
    timing = args.reward_speedup > 0
    rewards = VerifierRewards(pool, args.profile, args.verify_workers, args.trials, args.verify_timeout, timing, log)
    _log(f"verifying replies on {pool.device}" + (f" (GPU {pool.shared.gpu})" if pool.shared.gpu else ""))
    try:
        trainer = build_trainer(args, model, tokenizer, prompts_rows, rewards)
        runs.resume(trainer, args, _log)
        runs.save_final(trainer, args, _log)
    finally:
        pool.close()


# ---------------------------------------------------------------- data


def load_prompts(args: GRPOArgs) -> Dataset:
    """The `train` rows of the profile's RL files that `--prompts` names: the prompt, the task the rewards verify
    replies against, and for an improve prompt the seed kernel it shows (empty for a convert prompt)."""
    import datasets

    parts = []
    if args.prompts in ("convert", "both"):
        rows = runs.read_records(args, ["prompt", "task"], f"training.data kept no task for profile {args.profile}")
        parts.append(rows.add_column("seed", [""] * rows.num_rows) if args.prompts == "both" else rows)
    if args.prompts in ("improve", "both"):
        path = records_path(Path(args.data), IMPROVE_RL, args.profile)
        empty = "training.data --improve found no timed kernel to seed a prompt with"
        if not path.exists():
            raise runs.TrainingError(
                f"{path} does not exist: --prompts {args.prompts} reads the records of training.data --improve"
            )
        parts.append(runs.read_records(args, ["prompt", "task", "seed"], empty, path))
    rows = parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
    prompts_rows = runs.split_of(rows, "train", args, required=True)
    _log(f"{prompts_rows.num_rows} train prompts ({args.prompts}) from {args.data}")
    return prompts_rows


def _check_timed(args: GRPOArgs) -> None:
    """Improve prompts are rewarded by measured speed: refuse them where replies would be verified on the CPU
    (before the model loads)."""
    from verifier import resolve_device

    if args.prompts == "convert":
        return
    try:
        device = resolve_device(args.verify_device)
    except ValueError as exc:
        raise runs.TrainingError(f"--verify-device: {exc}") from exc
    if device != "cuda":
        raise runs.TrainingError(
            f"--prompts {args.prompts} rewards measured speed, and this machine verifies replies on the CPU, where "
            "nothing is timed: run on a GPU"
        )


def _own_gpu(args: GRPOArgs) -> int | None:
    """This rank's GPU index under accelerate (its replies are verified there), or None for a single process."""
    if args.verify_device == "cpu" or "LOCAL_RANK" not in os.environ:
        return None
    return int(os.environ["LOCAL_RANK"])


def _check_vllm() -> None:
    try:
        import vllm  # noqa: F401
    except ImportError as exc:
        raise runs.TrainingError(
            "--vllm needs vLLM installed (pip install vllm, on a CUDA machine); or drop --vllm"
        ) from exc


# ---------------------------------------------------------------- training


def build_trainer(args: GRPOArgs, model, tokenizer, prompts_rows: Dataset, rewards):
    """trl's GRPOTrainer with the verifier's reward functions, weighted as the arguments say."""
    from trl import GRPOConfig, GRPOTrainer

    grpo_config = GRPOConfig(
        per_device_train_batch_size=args.per_device_batch_size,
        gradient_accumulation_steps=args.gradient_accumulation,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        temperature=args.temperature,
        beta=args.beta,
        learning_rate=args.learning_rate,
        lr_scheduler_type=args.lr_scheduler,
        num_train_epochs=args.epochs,
        max_steps=args.max_steps,
        reward_weights=[args.reward_correct, args.reward_speedup, args.reward_format, args.reward_runs],
        scale_rewards=args.scale_rewards,
        use_vllm=args.vllm,
        vllm_mode=args.vllm_mode,
        vllm_server_base_url=args.vllm_server or None,
        **runs.trainer_arguments(args, GRPOConfig),
    )
    out = Path(args.output_dir)
    times = step_times(out / STEPS_LOG, rewards)
    rollout = times.timed(FastGeneration()) if args.fast_generation else None
    trainer = GRPOTrainer(
        model=model,
        args=grpo_config,
        train_dataset=prompts_rows,
        reward_funcs=rewards.functions(),
        processing_class=tokenizer,
        peft_config=runs.lora_config(args) if args.lora else None,
        callbacks=[runs.run_log(out / runs.LOG, _log), runs.time_limit(args.max_minutes, _log), times],
        rollout_func=rollout,
    )
    times.watch_generation(trainer.model)
    return trainer


def step_times(path: Path, rewards) -> TrainerCallback:
    """A trainer callback writing each optimizer step's seconds to `path`: all of it, the part spent generating
    replies (the model's `generate`) and the part spent verifying them (the reward functions); the rest is the
    update. Built here because transformers takes seconds to import, which `--help` should not wait for."""
    from transformers import TrainerCallback

    class StepTimes(TrainerCallback):
        def __init__(self):
            self.generating = 0.0

        def watch_generation(self, model) -> None:
            model.generate = self.timed(model.generate)

        def timed(self, generate):
            """`generate`, its seconds added to the step's generation time."""

            def timed(*args, **kwargs):
                started = time.monotonic()
                try:
                    return generate(*args, **kwargs)
                finally:
                    self.generating += time.monotonic() - started

            return timed

        def on_step_begin(self, args, state, control, **kwargs):
            self.started, self.generating = time.monotonic(), 0.0
            self.rewarding = rewards.seconds

        def on_step_end(self, args, state, control, **kwargs):
            total = time.monotonic() - self.started
            reward = rewards.seconds - self.rewarding
            line = {
                "step": state.global_step,
                "seconds": round(total, 3),
                "generation_s": round(self.generating, 3),
                "reward_s": round(reward, 3),
                "update_s": round(max(total - self.generating - reward, 0.0), 3),
                "verified": rewards.verified,
            }
            if state.is_world_process_zero:
                with path.open("a") as f:
                    f.write(json.dumps(line) + "\n")
                _log(
                    f"step {line['step']}: {total:.1f} s (generation {line['generation_s']:.1f}, "
                    f"reward {line['reward_s']:.1f}, update {line['update_s']:.1f}); {rewards.verified} replies "
                    f"verified so far"
                )

    return StepTimes()


def _log(text: str) -> None:
    print(f"training.grpo: {text}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
