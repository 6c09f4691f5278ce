import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { applicability } from "../src/applicability";

const TASK = `import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


@torch.no_grad()
def helper(x):
    return x * 2

VALUE = 3
`;

describe("applicability", () => {
  it("offers Convert inside a class or function of a file that imports torch, and nowhere else", () => {
    const lines = TASK.split("\n");
    const at = (text: string) => lines.findIndex((line) => line.includes(text));
    assert.equal(applicability(TASK, at("class Model")).canConvert, true);
    assert.equal(applicability(TASK, at("return torch.relu")).canConvert, true);
    assert.equal(applicability(TASK, at("@torch.no_grad")).canConvert, true);
    assert.equal(applicability(TASK, at("return x * 2")).canConvert, true);
    assert.equal(applicability(TASK, at("import torch.nn")).canConvert, false);
    assert.equal(applicability(TASK, at("VALUE")).canConvert, false);
    assert.equal(applicability(TASK.replace(/^import torch$/m, "import numpy"), at("class Model")).canConvert, true);
    const noTorch = "import numpy as np\n\ndef f(x):\n    return x\n";
    assert.equal(applicability(noTorch, 3).canConvert, false);
  });

  it("offers Verify only in a file with a Triton kernel or a ModelNew", () => {
    assert.equal(applicability(TASK, 4).canVerify, false);
    assert.equal(applicability("import triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n", 0).canVerify, true);
    assert.equal(applicability("class ModelNew(nn.Module):\n    pass\n", 0).canVerify, true);
  });

  it("leaves a huge file to the server", () => {
    const huge = "x = 1\n".repeat(30000);
    assert.deepEqual(applicability(huge, 5), { canConvert: true, canVerify: true });
  });
});
