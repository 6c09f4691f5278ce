"""How replies become candidate modules, for each prompt profile."""

from __future__ import annotations

from model_server.backends.text import candidates_from_replies
from model_server.prompts import completion_prompt, reply_code

MODULE = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n"


def test_a_kernelllm_reply_is_the_code_block_its_prompt_opened():
    """The `kernelllm` prompt ends inside an opened ```python block, so the model's reply is code and then the
    closing fence (what the SFT pairs teach); the fence and anything after it are not part of the module."""
    assert completion_prompt("kernelllm", "task").endswith("```python\n")
    assert reply_code("kernelllm", MODULE + "```\n") == MODULE
    assert reply_code("kernelllm", MODULE + "```\nThat is the module.") == MODULE
    assert reply_code("kernelllm", MODULE) == MODULE, "a reply cut short before the fence"
    [candidate] = candidates_from_replies("kernelllm", [MODULE + "```\n"])
    assert candidate.source == MODULE


def test_a_chat_reply_gives_its_last_block_that_defines_the_module():
    reply = f"Plan first.\n\n```python\nx = 1\n```\n\n```python\n{MODULE}```\nDone."
    assert reply_code("autotriton", reply) == MODULE
    assert reply_code("chat", "no code at all") is None
    [candidate] = candidates_from_replies("chat", ["no code at all"])
    assert candidate.source == "no code at all", "a reply without code is still verified (and fails)"
