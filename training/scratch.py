"""Build a small causal LM from scratch: a byte-level BPE tokenizer trained on the data's own text and a randomly
initialised Llama, saved as a model directory that `training.sft`, the `transformers` backend and vLLM load.

    python -m training.scratch --output-dir MODEL [--data DIR] [--size tiny|small|base]

No weights can be downloaded where the project is tested, so the CPU smoke run and the tests start from such a
model; on a GPU a `small` or `base` one learns the data's kernels through `training.sft`. The tokenizer is
trained on the prompts and completions of `DIR/*.jsonl` (from `training.data`) when given, else on a built-in
corpus of Triton and PyTorch snippets.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from training import config, jsonl

EOS = "<|endoftext|>"
# A message is `<|role|>` on a line, then its text; an assistant message ends with EOS, so a trained model stops.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}"
    "{% if m['role'] == 'assistant' %}" + EOS + "{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL_TOKENS = [EOS, "<|system|>", "<|user|>", "<|assistant|>"]
# vocabulary, hidden size, layers, attention heads (head_dim 64: vLLM's CPU build supports no smaller)
SIZES = {
    "tiny": (400, 64, 2, 1),  # ~0.1M parameters: drives real code paths in tests, learns nothing
    "small": (4096, 384, 6, 6),  # ~14M
    "base": (8192, 768, 12, 12),  # ~100M
}
BUILTIN_CORPUS = [
    "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n",
    "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n    def forward(self, x):\n",
    "@triton.jit\ndef kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):\n    pid = tl.program_id(0)\n",
    "    offsets = pid * BLOCK + tl.arange(0, BLOCK)\n    mask = offsets < n_elements\n",
    "    x = tl.load(x_ptr + offsets, mask=mask)\n    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)\n",
    "        out = torch.empty_like(x)\n        grid = (triton.cdiv(x.numel(), 1024),)\n        return out\n",
    "```python\n```\nConvert this PyTorch task to Triton: def get_inputs(): return [torch.randn(8, 8)]\n",
]


@dataclass
class ScratchArgs:
    """What `python -m training.scratch` builds."""

    output_dir: str = field(default="", metadata={"help": "directory for the model and its tokenizer"})
    data: str = field(default="", metadata={"help": "a training.data directory whose JSONL text trains the tokenizer"})
    size: str = field(default="tiny", metadata={"help": "tiny (tests), small (~14M) or base (~100M parameters)"})
    max_length: int = field(default=8192, metadata={"help": "longest sequence the model takes, in tokens"})
    seed: int = field(default=0, metadata={"help": "seed of the initial weights"})

    def __post_init__(self) -> None:
        if not self.output_dir:
            raise ValueError("--output-dir is required")
        if self.size not in SIZES:
            raise ValueError(f"--size must be one of {', '.join(SIZES)}, got {self.size!r}")
        if self.data and not Path(self.data).is_dir():
            raise ValueError(f"--data: not a directory: {self.data}")
        if self.max_length < 64:
            raise ValueError("--max-length must be at least 64")


def main(argv: list[str] | None = None) -> int:
    return config.main(ScratchArgs, make, argv, __doc__, "python -m training.scratch")


def make(args: ScratchArgs) -> int:
    """Build the model the arguments describe; the exit code."""
    config.announce(args)
    try:
        corpus = list(data_text(Path(args.data))) if args.data else []
    except ValueError as exc:
        print(f"training.scratch: {exc}", file=sys.stderr)
        return 2
    parameters = build(Path(args.output_dir), corpus, args.size, args.max_length, args.seed)
    print(f"training.scratch: wrote a {parameters / 1e6:.1f}M-parameter model to {args.output_dir}", file=sys.stderr)
    return 0


def build(directory: Path, corpus: list[str], size: str = "tiny", max_length: int = 8192, seed: int = 0) -> int:
    """Train a tokenizer on `corpus` (the built-in snippets where it is empty), initialise a Llama of `size`,
    and save both to `directory`; the model's parameter count."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocabulary, hidden, layers, heads = SIZES[size]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocabulary, special_tokens=SPECIAL_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(corpus or BUILTIN_CORPUS * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=EOS, pad_token=EOS)
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = max_length
    model_config = LlamaConfig(
        vocab_size=fast.vocab_size,
        hidden_size=hidden,
        intermediate_size=hidden * 4 if size != "tiny" else 128,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        head_dim=hidden // heads,
        max_position_embeddings=max_length,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(model_config)
    model.generation_config.eos_token_id = fast.eos_token_id
    model.generation_config.pad_token_id = fast.pad_token_id
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    fast.save_pretrained(directory)
    return sum(p.numel() for p in model.parameters())


def data_text(directory: Path) -> Iterator[str]:
    """Every prompt and completion text of the JSONL records in `directory`, for the tokenizer to learn from."""
    paths = sorted(directory.glob("*.jsonl"))
    if not paths:
        raise ValueError(f"--data: no .jsonl files in {directory} (run python -m training.data first)")
    for path in paths:
        for record in jsonl.read(path):
            for key in ("prompt", "completion"):
                yield from _texts(record.get(key))


def _texts(value: object) -> Iterable[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [m["content"] for m in value if isinstance(m, dict) and isinstance(m.get("content"), str)]
    return []


if __name__ == "__main__":
    sys.exit(main())
