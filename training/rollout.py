"""GRPO's replies from a bf16 copy of the policy that decodes with a static KV cache, compiled on a GPU.

trl's own path runs `generate` on the training weights (fp32 in a full fine-tune) with compile disabled: one eager
forward per token, launch-bound (38-98 ms a token for a 30-layer 135M model on an H200,
benchmarks/results/training-notes.md). Here the replies come from a copy of the policy in bf16 sampled through
`model_server.backends.static_generation`. The copy's weights are refreshed from the policy before every
generation, in place, so the captured graphs stay valid.
"""

from __future__ import annotations

import copy
from typing import Any

from model_server.backends import static_generation


class FastGeneration:
    """A trl `rollout_func`: the completions of `prompts` (one per prompt, as the trainer's batch repeats each
    prompt `num_generations` times), sampled as the trainer's generation config says."""

    def __init__(self):
        self.copy = None

    def __call__(self, prompts: list, trainer: Any) -> dict[str, list]:
        prompt_ids, _, _ = trainer._tokenize_prompts(prompts)
        pad = static_generation.pad_id(trainer._tokenizer)
        policy = trainer.accelerator.unwrap_model(trainer.model)
        completion_ids = self.sample(policy, prompt_ids, trainer.generation_config, pad, set(trainer.eos_token_ids))
        return {"prompt_ids": [list(ids) for ids in prompt_ids], "completion_ids": completion_ids, "logprobs": None}

    def sample(self, policy: Any, prompt_ids: list[list[int]], config: Any, pad: int, eos: set) -> list[list[int]]:
        """One completion per prompt from the copy, synced with `policy` first, sampled as the generation config
        `config` says (static cache, compiled on a GPU), each cut after its first token of `eos`."""
        tokens = static_generation.generate(self._synced(policy), prompt_ids, config, pad)
        return [_through_first(row, eos) for row in tokens]

    def _synced(self, policy: Any) -> Any:
        """The generation copy with the policy's current weights (made on first use: bf16 on a GPU)."""
        import torch

        if self.copy is None:
            self.copy = copy.deepcopy(policy)
            # wrappers set on the policy instance: step timing on `generate` (it would call the policy), accelerate's
            # mixed-precision autocast on `forward` (it mixes fp32 keys with bf16 values in the static cache)
            for wrapped in ("generate", "forward"):
                vars(self.copy).pop(wrapped, None)
            if getattr(self.copy, "supports_gradient_checkpointing", False):  # the trainer's: it turns the cache off
                disable = getattr(self.copy, "activation_checkpointing_disable", None)  # transformers >= 5.24
                (disable or self.copy.gradient_checkpointing_disable)()
            self.copy.config.use_cache = True
            if next(policy.parameters()).device.type == "cuda":
                self.copy.to(torch.bfloat16)
            self.copy.eval().requires_grad_(False)
            return self.copy
        mine = dict(self.copy.named_parameters())
        with torch.no_grad():
            for name, weight in policy.named_parameters():
                mine[name].copy_(weight)
        return self.copy


def _through_first(tokens: list[int], eos: set) -> list[int]:
    """A reply's tokens up to and including its first end-of-sequence token (what trl keeps)."""
    for position, token in enumerate(tokens):
        if token in eos:
            return tokens[: position + 1]
    return tokens
