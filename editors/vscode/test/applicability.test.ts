import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { applicability } from "../src/applicability";

const TASK = `import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8)]
`;

describe("applicability", () => {
  it("offers Convert in a file that imports torch and defines something to convert", () => {
    assert.equal(applicability(TASK).canConvert, true);
    assert.equal(applicability("import torch\n\ndef f(x):\n    return x\n").canConvert, true);
    assert.equal(applicability("from torch import nn\n\nclass M(nn.Module):\n    pass\n").canConvert, true);
  });

  it("does not offer Convert in plain Python, or where torch has nothing to convert", () => {
    assert.equal(applicability("import numpy as np\n\ndef f(x):\n    return x\n").canConvert, false);
    assert.equal(applicability("import torch\n\nX = torch.ones(3)\n").canConvert, false);
    assert.equal(applicability("import torch\n\ndef get_inputs():\n    return []\n").canConvert, false);
    assert.equal(applicability("# import torch\ndef f(x):\n    return x\n").canConvert, false);
  });

  it("offers Verify only in a file with a Triton kernel or a ModelNew", () => {
    assert.equal(applicability(TASK).canVerify, false);
    assert.equal(applicability("import triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n").canVerify, true);
    assert.equal(applicability("class ModelNew(nn.Module):\n    pass\n").canVerify, true);
  });

  it("leaves a huge file to the server", () => {
    assert.deepEqual(applicability("x = 1\n".repeat(400_000)), { canConvert: true, canVerify: true });
  });
});
