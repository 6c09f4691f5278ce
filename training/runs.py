"""What `training.sft` and `training.grpo` share: the arguments of a run (its data, the model it starts from, whole
or under a LoRA adapter), reading its records, loading the model, the precision it trains in, the run's log,
resuming, and the `final/` directory that transformers and vLLM load."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from model_server import prompts
from training.data import records_path

if TYPE_CHECKING:
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import PreTrainedModel, PreTrainedTokenizerBase, Trainer, TrainerCallback

FINAL = "final"
ADAPTER = "adapter"
LOG = "log.jsonl"
SCHEDULERS = ("cosine", "linear", "constant", "constant_with_warmup")  # learning-rate schedules of transformers


class TrainingError(Exception):
    """Input that cannot be trained on (data, model); the message names it."""


@dataclass
class RunArgs:
    """The arguments every training run has: where it writes, what it reads, the model it starts from and whether it
    trains every weight or a LoRA adapter. A command's dataclass adds its own after these."""

    KIND: ClassVar[str] = ""  # the training.data records it reads: "sft" or "rl"

    output_dir: str = field(default="", metadata={"help": "run directory: config, logs, checkpoints and final/"})
    data: str = field(default="", metadata={"help": "a training.data output directory"})
    profile: str = field(default="autotriton", metadata={"help": "prompt profile of the records trained on"})
    model: str = field(
        default="", metadata={"help": "model to train: a local directory (an earlier run's final/) or a Hub id"}
    )
    chat_template: str = field(
        default="", metadata={"help": "Jinja file: the chat template of a model that has none (chat profiles)"}
    )
    lora: bool = field(default=False, metadata={"help": "train a LoRA adapter instead of every weight"})
    lora_rank: int = field(default=16, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA alpha (the update is scaled by alpha / rank)"})
    lora_dropout: float = field(default=0.05, metadata={"help": "dropout on the LoRA input"})
    lora_target_modules: list[str] = field(
        default_factory=lambda: ["all-linear"], metadata={"help": "modules LoRA adapts (all-linear: every linear)"}
    )
    merge_lora: bool = field(
        default=True, metadata={"help": "final/ is the base model with the adapter merged in (else the adapter)"}
    )
    gradient_checkpointing: bool = field(
        default=False,
        metadata={"help": "recompute activations in the backward pass (less memory, about a fifth slower)"},
    )
    seed: int = field(default=0, metadata={"help": "seed of the data order, sampling, dropout and LoRA initialisation"})
    logging_steps: int = field(default=10, metadata={"help": "log every this many optimizer steps"})
    save_steps: int = field(default=500, metadata={"help": "checkpoint every this many optimizer steps"})
    save_total_limit: int = field(default=2, metadata={"help": "checkpoints kept, the latest ones (0: all)"})
    report_to: list[str] = field(default_factory=list, metadata={"help": "trackers such as tensorboard or wandb"})
    max_minutes: float = field(
        default=0.0,
        metadata={"help": "stop after the step that passes this many minutes, saving final/ as usual (0: no limit)"},
    )

    def __post_init__(self) -> None:
        for flag, value in (("--output-dir", self.output_dir), ("--data", self.data), ("--model", self.model)):
            if not value:
                raise ValueError(f"{flag} is required")
        if self.profile not in prompts.PROFILES:
            raise ValueError(f"--profile must be one of {', '.join(prompts.PROFILES)}, got {self.profile!r}")
        if not Path(self.data).is_dir():
            raise ValueError(f"--data: not a directory: {self.data}")
        if not self.records.is_file():
            found = ", ".join(sorted(p.name for p in Path(self.data).glob(f"{self.KIND}.*.jsonl"))) or "none"
            raise ValueError(
                f"--data: no {self.records.name} in {self.data} ({self.KIND.upper()} files there: {found}; "
                "run python -m training.data, or pick another --profile)"
            )
        if self.chat_template and not Path(self.chat_template).is_file():
            raise ValueError(f"--chat-template: not a file: {self.chat_template}")
        if min(self.lora_rank, self.lora_alpha) < 1 or not 0 <= self.lora_dropout < 1:
            raise ValueError("--lora-rank and --lora-alpha must be at least 1, --lora-dropout in [0, 1)")
        if self.lora and not self.lora_target_modules:
            raise ValueError("--lora-target-modules: name at least one module (or all-linear)")
        if self.max_minutes < 0:
            raise ValueError("--max-minutes must be at least 0")
        if min(self.logging_steps, self.save_steps) < 1 or self.save_total_limit < 0:
            raise ValueError("--logging-steps and --save-steps must be at least 1, --save-total-limit at least 0")

    @property
    def records(self) -> Path:
        return records_path(Path(self.data), self.KIND, self.profile)


def read_records(args: RunArgs, columns: list[str], empty: str, path: Path | None = None) -> Dataset:
    """`columns` and `split` of the run's records (or of `path`), through `datasets`; `empty` says why a file may
    be empty."""
    import datasets

    path = path or args.records
    if not path.read_text().strip():
        raise TrainingError(f"{path} is empty ({empty})")
    rows = datasets.load_dataset("json", data_files=str(path), split="train")
    missing = {*columns, "split"} - set(rows.column_names)
    if missing:
        kind = args.KIND.upper()
        raise TrainingError(f"{path}: records lack {', '.join(sorted(missing))} (not a training.data {kind} file?)")
    return rows.select_columns([*columns, "split"])


def split_of(rows: Dataset, name: str, args: RunArgs, required: bool = False) -> Dataset:
    """The rows of split `name`, without the split column; none at all is an error where `required`."""
    chosen = rows.filter(lambda split: split == name, input_columns="split").remove_columns("split")
    if required and chosen.num_rows == 0:
        counts = {split: rows["split"].count(split) for split in sorted(set(rows["split"]))}
        raise TrainingError(f"{args.records}: no rows in the {name} split (rows per split: {counts})")
    return chosen


def start(args: RunArgs, command: str, first_prompt: object) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model and tokenizer a run trains, after checking the launch and that the model can read the prompts."""
    check_launch(command)
    model, tokenizer = load_model(args)
    if args.chat_template:
        tokenizer.chat_template = Path(args.chat_template).read_text()
    if isinstance(first_prompt, list) and not tokenizer.chat_template:
        raise TrainingError(
            f"the {args.profile} profile's prompts are chat messages and {args.model} has no chat template: "
            "give one with --chat-template FILE.jinja, or train on --profile kernelllm"
        )
    return model, tokenizer


def resume(trainer: Trainer, args: RunArgs, log: Callable[[str], None]) -> None:
    """Train from the run directory's last checkpoint (from the start where it has none)."""
    from transformers.trainer_utils import get_last_checkpoint

    checkpoint = get_last_checkpoint(args.output_dir)
    if checkpoint is not None:
        log(f"resuming from {checkpoint} (step {Path(checkpoint).name.split('-')[-1]})")
    trainer.train(resume_from_checkpoint=checkpoint)


def check_launch(command: str) -> None:
    """Refuse one process on several GPUs (the trainer would wrap the model in `nn.DataParallel`, which trl does not
    support): name the two ways to run instead."""
    import torch

    count = torch.cuda.device_count()
    if count > 1 and "LOCAL_RANK" not in os.environ:
        raise TrainingError(
            f"{count} GPUs are visible to one process: run on all of them with `accelerate launch --config_file "
            f"training/configs/accelerate-ddp.yaml --num_processes {count} -m {command} ...`, or on one with "
            f"CUDA_VISIBLE_DEVICES=0"
        )


def precision() -> str:
    """`bf16` on a GPU that computes in it, else `fp32`."""
    import torch

    return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "fp32"


def load_model(args: RunArgs) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model of `args.model` and its tokenizer. A full fine-tune keeps fp32 weights (bf16 autocast computes on a
    GPU): bf16 weights would round away small updates. A LoRA base is frozen, so it is loaded in bf16 on a GPU."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    local = Path(args.model).expanduser()
    if local.is_dir() and not (local / "config.json").is_file():
        raise TrainingError(f"cannot load model {args.model}: no config.json in that directory")
    if not local.exists() and (args.model.startswith(("/", ".", "~")) or args.model.count("/") > 1):
        raise TrainingError(f"cannot load model {args.model}: no such directory")
    dtype = torch.bfloat16 if args.lora and precision() == "bf16" else torch.float32
    try:
        tokenizer = AutoTokenizer.from_pretrained(args.model)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype)
    except Exception as exc:  # transformers raises OSError, ValueError and others for a model it cannot read
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TrainingError(f"cannot load model {args.model}: {reason}") from exc
    return model, tokenizer


def lora_config(args: RunArgs) -> LoraConfig:
    """The adapter the `lora_*` arguments describe."""
    from peft import LoraConfig

    targets = args.lora_target_modules
    return LoraConfig(
        r=args.lora_rank,
        lora_alpha=args.lora_alpha,
        lora_dropout=args.lora_dropout,
        target_modules="all-linear" if targets == ["all-linear"] else targets,
        task_type="CAUSAL_LM",
    )


def run_log(path: Path, log: Callable[[str], None]) -> TrainerCallback:
    """A trainer callback: each log appended to `path`; at the end, the steps and tokens per second of this run.
    Built here because transformers takes seconds to import, which `--help` should not wait for."""
    from transformers import TrainerCallback

    class RunLogCallback(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.start = (state.global_step, state.num_input_tokens_seen, time.monotonic())

        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and logs:
                with path.open("a") as f:
                    f.write(json.dumps({"step": state.global_step, **logs}) + "\n")

        def on_train_end(self, args, state, control, **kwargs):
            steps, tokens, started = self.start
            seconds = max(time.monotonic() - started, 1e-9)
            steps, tokens = state.global_step - steps, state.num_input_tokens_seen - tokens
            if state.is_world_process_zero:
                log(
                    f"trained {steps} steps ({tokens} tokens) in {seconds:.1f} s: {steps / seconds:.3f} steps/s, "
                    f"{tokens / seconds:.0f} tokens/s; at step {state.global_step}"
                )

    return RunLogCallback()


def time_limit(minutes: float, log: Callable[[str], None]) -> TrainerCallback:
    """A trainer callback ending training at the first optimizer step after `minutes` of this invocation (none for
    0), so a run fits a machine booked for a while and still writes final/. Every rank stops at the same step:
    the ranks agree through the process group where there is one."""
    import torch
    from transformers import TrainerCallback

    class TimeLimit(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.deadline = time.monotonic() + minutes * 60

        def on_step_end(self, args, state, control, **kwargs):
            if not minutes:
                return
            over = torch.tensor([float(time.monotonic() > self.deadline)], device=args.device)
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                torch.distributed.all_reduce(over, op=torch.distributed.ReduceOp.MAX)
            if over.item():
                control.should_training_stop = True
                if state.is_world_process_zero:
                    log(f"--max-minutes {minutes:g} reached at step {state.global_step}: stopping")

    return TimeLimit()


def trainer_arguments(args: RunArgs, config_class: type) -> dict:
    """The trainer arguments every run sets the same way from its own: where it writes, its seed, logging and
    checkpoints, trackers, and the precision and memory settings of this machine."""
    on_gpu = precision() == "bf16"
    return {
        "output_dir": args.output_dir,
        "seed": args.seed,
        "logging_steps": args.logging_steps,
        "logging_first_step": True,
        "save_strategy": "steps",
        "save_steps": args.save_steps,
        "save_total_limit": args.save_total_limit or None,
        "report_to": args.report_to or "none",
        "bf16": on_gpu,
        "dataloader_pin_memory": on_gpu,
        **checkpointing(config_class, args.gradient_checkpointing),
    }


def checkpointing(config_class: type, enabled: bool) -> dict[str, bool]:
    """The argument that turns activation (gradient) checkpointing on or off: transformers 5.24 renamed it, and
    setting the old name warns there, while older versions know only the old name."""
    fields = config_class.__dataclass_fields__
    return {"activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing": enabled}


def save_final(trainer: Trainer, args: RunArgs, log: Callable[[str], None]) -> None:
    """Write `final/`: the fine-tuned model, or for LoRA the base with the adapter merged in (the adapter itself
    goes to `adapter/`), or with `--no-merge-lora` the adapter; the tokenizer beside it."""
    out = Path(args.output_dir)
    if not args.lora:
        trainer.save_model(str(out / FINAL))
    else:
        trainer.save_model(str(out / (ADAPTER if args.merge_lora else FINAL)))
        trainer.accelerator.wait_for_everyone()
        if args.merge_lora and trainer.accelerator.is_main_process:
            merge_lora(args.model, out / ADAPTER, out / FINAL)
    trainer.accelerator.wait_for_everyone()
    if trainer.accelerator.is_main_process:
        log(f"wrote {out / FINAL}")


def merge_lora(base: str, adapter: Path, final: Path) -> None:
    """The base model, loaded afresh in its own dtype, with the adapter's update added into its weights."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base, dtype="auto")
    merged = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    merged.save_pretrained(final)
    AutoTokenizer.from_pretrained(adapter).save_pretrained(final)
