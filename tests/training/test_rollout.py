"""The generation copy of `training/rollout.py` on a CPU, with a tiny Llama built from scratch."""

from __future__ import annotations

from types import MethodType

import torch
from transformers import AutoModelForCausalLM, GenerationConfig

from training.rollout import FastGeneration, _through_first


def test_the_copy_follows_the_policy_in_place(model_dir):
    policy = AutoModelForCausalLM.from_pretrained(model_dir)
    policy.gradient_checkpointing_enable()
    rollout = FastGeneration()
    first = rollout._synced(policy)
    assert first is not policy and first.config.use_cache
    assert not any(getattr(m, "gradient_checkpointing", False) for m in first.modules())
    addresses = [p.data_ptr() for p in first.parameters()]
    with torch.no_grad():
        for weight in policy.parameters():
            weight.add_(0.5)  # an optimizer step
    again = rollout._synced(policy)
    assert again is first and [p.data_ptr() for p in again.parameters()] == addresses  # captured graphs stay valid
    for (name, mine), (_, theirs) in zip(again.named_parameters(), policy.named_parameters(), strict=True):
        assert torch.equal(mine, theirs), name
        assert not mine.requires_grad


def test_a_reply_ends_at_its_first_end_of_sequence_token():
    assert _through_first([5, 7, 2, 9, 2], {2}) == [5, 7, 2]
    assert _through_first([5, 7, 9], {2, 3}) == [5, 7, 9]
    assert _through_first([3], {2, 3}) == [3]


def test_the_copy_generates_itself_even_where_the_policy_generate_is_wrapped(model_dir):
    """The trainer's step timing wraps the policy's `generate` (an instance attribute, which a deep copy keeps):
    the copy must not call the policy's."""
    policy = AutoModelForCausalLM.from_pretrained(model_dir)

    def policy_generate(*args, **kwargs):
        raise AssertionError("the policy generated, not its copy")

    policy.generate = policy_generate
    rollout = FastGeneration()
    config = GenerationConfig(do_sample=False, max_new_tokens=4, min_new_tokens=4)
    [reply] = rollout.sample(policy, [[1, 2, 3]], config, pad=0, eos=set())
    assert len(reply) == 4 and rollout.copy.generate.__self__ is rollout.copy


def test_the_copy_runs_without_the_policys_mixed_precision_wrapper(model_dir):
    """Under bf16 mixed precision accelerate wraps the policy's `forward` in autocast (an instance attribute, which
    a deep copy keeps). Through it the copy's static cache got fp32 keys and bf16 values and the first GRPO step
    failed on an H100; the copy must run its own forward, in its own dtype. The wrapper is built as accelerate's
    `prepare_model` builds it (its `Accelerator` is a process-wide singleton that other tests configure)."""
    from accelerate.utils import convert_outputs_to_fp32

    policy = AutoModelForCausalLM.from_pretrained(model_dir)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16)
    policy.forward = MethodType(convert_outputs_to_fp32(autocast(policy.forward.__func__)), policy)
    rollout = FastGeneration()
    copy = rollout._synced(policy)
    autocast_on = []
    copy.lm_head.register_forward_hook(lambda *_: autocast_on.append(torch.is_autocast_enabled("cpu")))
    config = GenerationConfig(do_sample=False, max_new_tokens=4, min_new_tokens=4)
    [reply] = rollout.sample(policy, [[1, 2, 3]], config, pad=0, eos=set())
    assert len(reply) == 4 and "forward" not in vars(copy)
    assert autocast_on and not any(autocast_on), "the copy decoded under the policy's autocast"
