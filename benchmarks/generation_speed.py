"""GRPO's reply generation on a GPU: `training/rollout.py`'s bf16 copy with a static KV cache and a compiled decoding
step, against trl's own path (transformers' `generate` on the fp32 policy under bf16 autocast, compile off).

    python benchmarks/generation_speed.py [--shape smollm2-135m] [--batch 32] [--prompt 1024] [--new 384]
                                          [--repeats 2] [--skip-trl]

The model has random weights in the shape of a real one (no weights can be downloaded where this runs): the time
of a decoding step does not depend on the values. Every reply runs to `--new` tokens (no end-of-sequence token).
Prints one row per run: seconds for the batch and new tokens per second; the fast path's first run includes its
compile.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from training.rollout import FastGeneration

SHAPES = {
    "smollm2-135m": {
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "vocab_size": 49152,
    },
    "qwen2.5-0.5b": {
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "vocab_size": 151936,
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="smollm2-135m")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--prompt", type=int, default=1024, help="prompt tokens")
    parser.add_argument("--new", type=int, default=384, help="new tokens per reply")
    parser.add_argument("--repeats", type=int, default=2, help="runs of the fast path")
    parser.add_argument("--skip-trl", action="store_true", help="time the fast path only")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("this benchmark needs a CUDA GPU")
    torch.manual_seed(0)
    config = LlamaConfig(**SHAPES[args.shape], max_position_embeddings=8192, tie_word_embeddings=True)
    policy = LlamaForCausalLM(config).cuda()  # fp32, as a full fine-tune keeps it
    prompts = torch.randint(1, config.vocab_size, (args.batch, args.prompt))
    sampling = GenerationConfig(
        do_sample=True,
        temperature=1.0,
        max_new_tokens=args.new,
        min_new_tokens=args.new,
        pad_token_id=0,
        eos_token_id=None,
        disable_compile=True,
    )
    device = torch.cuda.get_device_name()
    print(f"{args.shape}, batch {args.batch}, prompt {args.prompt}, {args.new} new tokens, {device}")
    print(f"{'path':<44} {'s':>8} {'new tokens/s':>14}")
    fast = FastGeneration()
    for run in range(args.repeats):
        seconds = _timed(lambda: fast.sample(policy, prompts.tolist(), sampling, 0, set()))
        label = "rollout.py: bf16 copy, static cache, compiled" + (" (1st)" if run == 0 else "")
        print(f"{label:<44} {seconds:>8.1f} {args.batch * args.new / seconds:>14.0f}", flush=True)
    if args.skip_trl:
        return
    mask = torch.ones_like(prompts)

    def trl_path() -> None:
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            policy.generate(input_ids=prompts.cuda(), attention_mask=mask.cuda(), generation_config=sampling)

    seconds = _timed(trl_path)
    print(f"{'trl: generate, fp32 policy, bf16 autocast':<44} {seconds:>8.1f} {args.batch * args.new / seconds:>14.0f}")


def _timed(fn) -> float:
    torch.cuda.synchronize()
    started = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
