"""Supervised fine-tuning on the verified pairs of `training.data`: trl's SFTTrainer, loss on the completion only.

    python -m training.sft --data DATA --model MODEL --output-dir RUN [--lora] [--config FILE.yaml] [flags]

Reads `DATA/sft.PROFILE.jsonl`, trains on its `train` rows and evaluates on its `val` rows (when there are any).
A row whose prompt and completion together exceed `--max-length` tokens is dropped, not truncated: a cut
completion would teach a module that never ends. The model is fine-tuned whole or, with `--lora`, through a LoRA
adapter; in bf16 autocast on a GPU that supports it, in fp32 otherwise. Written to the run directory:

- `config.yaml`: the resolved arguments;
- `log.jsonl`: every log of the trainer (loss, learning rate, grad norm, tokens/s, eval loss), one object a line;
- `checkpoint-N/`: the trainer's checkpoints; a re-run on the same directory resumes from the last one;
- `final/`: the model and its tokenizer, which `transformers` and vLLM load as is; for LoRA, the base model with
  the adapter merged in (the adapter itself in `adapter/`), or with `--no-merge-lora` the adapter alone.

Several GPUs or nodes: `accelerate launch --config_file training/configs/accelerate-ddp.yaml -m training.sft ...`
(also `accelerate-fsdp.yaml` and `accelerate-zero2.yaml`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from training import config, runs

if TYPE_CHECKING:
    from datasets import Dataset
    from transformers import PreTrainedModel, PreTrainedTokenizerBase
    from trl import SFTTrainer


@dataclass
class SFTArgs(runs.RunArgs):
    """What `python -m training.sft` trains (after the fields every run has: `RunArgs`)."""

    KIND: ClassVar[str] = "sft"

    learning_rate: float = field(default=2e-5, metadata={"help": "peak learning rate (AdamW)"})
    lr_scheduler: str = field(
        default="cosine", metadata={"help": "learning-rate schedule: " + ", ".join(runs.SCHEDULERS)}
    )
    warmup: float = field(default=0.03, metadata={"help": "warmup steps, or a share of all steps when below 1"})
    epochs: float = field(default=1.0, metadata={"help": "passes over the train rows"})
    max_steps: int = field(default=-1, metadata={"help": "stop after this many optimizer steps (-1: run the epochs)"})
    per_device_batch_size: int = field(default=1, metadata={"help": "rows per device in one forward pass"})
    gradient_accumulation: int = field(default=8, metadata={"help": "forward passes per optimizer step"})
    max_length: int = field(
        default=4096, metadata={"help": "longest prompt + completion in tokens; longer rows are dropped"}
    )
    eval_steps: int = field(default=0, metadata={"help": "evaluate on the val rows every N steps (0: at the end)"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.lr_scheduler not in runs.SCHEDULERS:
            raise ValueError(f"--lr-scheduler must be one of {', '.join(runs.SCHEDULERS)}, got {self.lr_scheduler!r}")
        if self.learning_rate <= 0 or self.epochs <= 0 or self.warmup < 0:
            raise ValueError("--learning-rate and --epochs must be > 0, --warmup >= 0")
        if self.max_steps == 0 or self.max_steps < -1:
            raise ValueError("--max-steps must be -1 (run the epochs) or at least 1")
        if min(self.per_device_batch_size, self.gradient_accumulation) < 1:
            raise ValueError("--per-device-batch-size and --gradient-accumulation must be at least 1")
        if self.max_length < 16 or self.eval_steps < 0:
            raise ValueError("--max-length must be at least 16, --eval-steps at least 0")


def main(argv: list[str] | None = None) -> int:
    return config.main(SFTArgs, train, argv, __doc__, "python -m training.sft", refused=(runs.TrainingError,))


def train(args: SFTArgs) -> None:
    """Fine-tune, resuming from the run directory's last checkpoint, and write `final/`."""
    from accelerate import PartialState

    if PartialState().is_main_process:
        config.announce(args)
        config.save(args, Path(args.output_dir))
    train_rows, val_rows = load_rows(args)
    model, tokenizer = runs.start(args, "training.sft", train_rows[0]["prompt"])
    trainer = build_trainer(args, model, tokenizer, train_rows, val_rows)
    drop_overlong(trainer, args.max_length)
    runs.resume(trainer, args, _log)
    if trainer.eval_dataset is not None:
        trainer.evaluate()
    runs.save_final(trainer, args, _log)


# ---------------------------------------------------------------- data


def load_rows(args: SFTArgs) -> tuple[Dataset, Dataset | None]:
    """The `train` and `val` rows (prompt and completion only) of the profile's SFT file; `val` is None if empty."""
    rows = runs.read_records(
        args, ["prompt", "completion"], f"training.data kept no verified pair for profile {args.profile}"
    )
    train_rows, val_rows = runs.split_of(rows, "train", args, required=True), runs.split_of(rows, "val", args)
    _log(f"{train_rows.num_rows} train rows, {val_rows.num_rows} val rows from {args.records}")
    return train_rows, val_rows if val_rows.num_rows else None


# ---------------------------------------------------------------- training


def build_trainer(
    args: SFTArgs,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    train_rows: Dataset,
    val_rows: Dataset | None,
) -> SFTTrainer:
    """trl's SFTTrainer over the rows, tokenized without truncation (`drop_overlong` applies `--max-length`)."""
    from trl import SFTConfig, SFTTrainer

    evaluate_every = val_rows is not None and args.eval_steps > 0
    sft_config = SFTConfig(
        per_device_train_batch_size=args.per_device_batch_size,
        per_device_eval_batch_size=args.per_device_batch_size,
        gradient_accumulation_steps=args.gradient_accumulation,
        learning_rate=args.learning_rate,
        lr_scheduler_type=args.lr_scheduler,
        warmup_steps=args.warmup,
        num_train_epochs=args.epochs,
        max_steps=args.max_steps,
        **runs.trainer_arguments(args, SFTConfig),
        max_length=None,
        completion_only_loss=True,
        eval_strategy="steps" if evaluate_every else "no",
        eval_steps=args.eval_steps if evaluate_every else None,
        include_num_input_tokens_seen="non_padding",
    )
    return SFTTrainer(
        model=model,
        args=sft_config,
        train_dataset=train_rows,
        eval_dataset=val_rows,
        processing_class=tokenizer,
        peft_config=runs.lora_config(args) if args.lora else None,
        callbacks=[runs.run_log(Path(args.output_dir) / runs.LOG, _log), runs.time_limit(args.max_minutes, _log)],
    )


def drop_overlong(trainer: SFTTrainer, max_length: int) -> None:
    """Remove the tokenized rows longer than `max_length` from the trainer's datasets, and say how many went."""
    for name in ("train_dataset", "eval_dataset"):
        rows = getattr(trainer, name)
        if rows is None:
            continue
        kept = rows.filter(lambda ids: len(ids) <= max_length, input_columns="input_ids")
        if kept.num_rows < rows.num_rows:
            longest = max(len(ids) for ids in rows["input_ids"])
            _log(
                f"{name.split('_')[0]}: dropped {rows.num_rows - kept.num_rows} of {rows.num_rows} rows longer than "
                f"--max-length {max_length} tokens (longest: {longest})"
            )
        if name == "train_dataset" and kept.num_rows == 0:
            raise runs.TrainingError(f"no train row fits in --max-length {max_length} tokens")
        if name == "eval_dataset" and kept.num_rows == 0:
            kept, trainer.args.eval_strategy = None, "no"
        setattr(trainer, name, kept)


def _log(text: str) -> None:
    print(f"training.sft: {text}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
