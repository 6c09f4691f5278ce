"""Tasks from real library code: the building blocks of installed libraries, written out as KernelBench modules.

    python -m training.harvest --out DIR [--library torch.nn transformers timm torchvision] [--sizes small medium large]

Each catalogued module of torch.nn (`CATALOGUE`) is instantiated with its documented defaults, where a required
argument gets a value from the size tier (channels, features, kernel 3), and called on inputs of the shape its
documentation asks for, at each size tier: `small` runs in Triton's interpreter on a CPU, `medium` and `large` are
what models meet on a GPU. For transformers, timm and torchvision (`training.harvest_libraries`) the task carries the
block's own source with what it needs from its library (`training.harvest_source`), and is kept only if it computes
what the library computes; the blocks refused, and why, go to `refused.json` beside the tasks. The task's docstring
names the module, the library's version and licence and the size, and its file name is `<library>_<Module>_<size>.py`.
`python -m training.data --harvest LIBRARY` builds training data from the same tasks.

Modules whose output is random in training mode (dropout, RReLU) are left out, and a library block's config has its
dropout rates at 0: the verifier compares outputs.
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from training import harvest_libraries, task_text

LICENCES = {"torch": "BSD-3-Clause"}
SIZES = {
    "small": {"B": 2, "C": 4, "L": 16, "H": 8, "W": 8, "D": 4, "F": 16, "N": 32, "E": 16, "S": 8},
    "medium": {"B": 8, "C": 32, "L": 256, "H": 32, "W": 32, "D": 8, "F": 256, "N": 1000, "E": 128, "S": 64},
    "large": {"B": 16, "C": 64, "L": 2048, "H": 128, "W": 128, "D": 16, "F": 1024, "N": 32000, "E": 512, "S": 256},
}
X1, X2, X3 = "torch.randn(B, C, L)", "torch.randn(B, C, H, W)", "torch.randn(B, C, D, H, W)"
ROWS = "torch.randn(B, F)"
PROBABILITIES = "torch.rand(B, F)"
CLASSES = "torch.randint(0, F, (B,))"


@dataclass(frozen=True)
class Entry:
    """A module of a library: the expression that builds it (size symbols allowed) and its inputs' expressions."""

    module: str
    build: str
    inputs: tuple[str, ...]
    family: str


def _many(family: str, names: str, build: str, *inputs: str) -> list[Entry]:
    """One entry per name of `names`, each built as `build` with `{name}` filled in."""
    return [Entry(name, build.format(name=name), inputs, family) for name in names.split()]


ACTIVATIONS = (
    "ReLU ReLU6 GELU SiLU Mish Tanh Sigmoid ELU SELU CELU LeakyReLU Hardtanh Hardswish Hardsigmoid Softplus "
    "Softsign Tanhshrink LogSigmoid Hardshrink Softshrink"
)
CATALOGUE = {
    "torch.nn": [
        *_many("activation", ACTIVATIONS, "nn.{name}()", X2),
        Entry("PReLU", "nn.PReLU(C)", (X2,), "activation"),
        Entry("Threshold", "nn.Threshold(0.1, 20.0)", (X2,), "activation"),
        Entry("GLU", "nn.GLU(dim=1)", (X2,), "activation"),
        *_many("softmax", "Softmax LogSoftmax Softmin", "nn.{name}(dim=-1)", ROWS),
        Entry("Softmax2d", "nn.Softmax2d()", (X2,), "softmax"),
        Entry("LayerNorm", "nn.LayerNorm(F)", ("torch.randn(B, S, F)",), "norm"),
        Entry("RMSNorm", "nn.RMSNorm(F)", ("torch.randn(B, S, F)",), "norm"),
        Entry("GroupNorm", "nn.GroupNorm(2, C)", (X2,), "norm"),
        Entry("BatchNorm1d", "nn.BatchNorm1d(C)", (X1,), "norm"),
        Entry("BatchNorm2d", "nn.BatchNorm2d(C)", (X2,), "norm"),
        Entry("BatchNorm3d", "nn.BatchNorm3d(C)", (X3,), "norm"),
        Entry("InstanceNorm1d", "nn.InstanceNorm1d(C)", (X1,), "norm"),
        Entry("InstanceNorm2d", "nn.InstanceNorm2d(C)", (X2,), "norm"),
        Entry("InstanceNorm3d", "nn.InstanceNorm3d(C)", (X3,), "norm"),
        Entry("LocalResponseNorm", "nn.LocalResponseNorm(2)", (X2,), "norm"),
        *_many("pool", "MaxPool1d AvgPool1d", "nn.{name}(2)", X1),
        *_many("pool", "MaxPool2d AvgPool2d", "nn.{name}(2)", X2),
        *_many("pool", "MaxPool3d AvgPool3d", "nn.{name}(2)", X3),
        *_many("pool", "AdaptiveAvgPool1d AdaptiveMaxPool1d", "nn.{name}(4)", X1),
        *_many("pool", "AdaptiveAvgPool2d AdaptiveMaxPool2d", "nn.{name}((2, 2))", X2),
        *_many("pool", "AdaptiveAvgPool3d AdaptiveMaxPool3d", "nn.{name}((2, 2, 2))", X3),
        Entry("LPPool2d", "nn.LPPool2d(2, 2)", (X2,), "pool"),
        Entry("Conv1d", "nn.Conv1d(C, C, 3)", (X1,), "conv"),
        Entry("Conv2d", "nn.Conv2d(C, C, 3)", (X2,), "conv"),
        Entry("Conv3d", "nn.Conv3d(C, C, 3)", (X3,), "conv"),
        Entry("ConvTranspose1d", "nn.ConvTranspose1d(C, C, 3)", (X1,), "conv"),
        Entry("ConvTranspose2d", "nn.ConvTranspose2d(C, C, 3)", (X2,), "conv"),
        Entry("ConvTranspose3d", "nn.ConvTranspose3d(C, C, 3)", (X3,), "conv"),
        Entry("Linear", "nn.Linear(F, F)", (ROWS,), "gemm"),
        Entry("Bilinear", "nn.Bilinear(F, F, F)", (ROWS, ROWS), "gemm"),
        Entry("Embedding", "nn.Embedding(N, E)", ("torch.randint(0, N, (B, S))",), "embedding"),
        Entry("EmbeddingBag", "nn.EmbeddingBag(N, E)", ("torch.randint(0, N, (B, S))",), "embedding"),
        Entry(
            "MultiheadAttention",
            "nn.MultiheadAttention(E, 4, batch_first=True)",
            ("torch.randn(B, S, E)",) * 3,
            "attention",
        ),
        Entry(
            "TransformerEncoderLayer",
            "nn.TransformerEncoderLayer(E, 4, dim_feedforward=2 * E, dropout=0.0, batch_first=True)",
            ("torch.randn(B, S, E)",),
            "attention",
        ),
        *_many("loss", "MSELoss L1Loss SmoothL1Loss HuberLoss SoftMarginLoss", "nn.{name}()", ROWS, ROWS),
        Entry("CrossEntropyLoss", "nn.CrossEntropyLoss()", (ROWS, CLASSES), "loss"),
        Entry("NLLLoss", "nn.NLLLoss()", ("torch.log_softmax(torch.randn(B, F), dim=1)", CLASSES), "loss"),
        Entry("BCELoss", "nn.BCELoss()", (PROBABILITIES, PROBABILITIES), "loss"),
        Entry("BCEWithLogitsLoss", "nn.BCEWithLogitsLoss()", (ROWS, PROBABILITIES), "loss"),
        Entry(
            "KLDivLoss",
            "nn.KLDivLoss(reduction='batchmean')",
            ("torch.randn(B, F).log_softmax(1)", "torch.randn(B, F).softmax(1)"),
            "loss",
        ),
        Entry(
            "CosineEmbeddingLoss", "nn.CosineEmbeddingLoss()", (ROWS, ROWS, "torch.randint(0, 2, (B,)) * 2 - 1"), "loss"
        ),
        Entry(
            "MarginRankingLoss",
            "nn.MarginRankingLoss()",
            ("torch.randn(B)", "torch.randn(B)", "torch.randint(0, 2, (B,)) * 2 - 1"),
            "loss",
        ),
        Entry("TripletMarginLoss", "nn.TripletMarginLoss()", (ROWS, ROWS, ROWS), "loss"),
        Entry("CosineSimilarity", "nn.CosineSimilarity(dim=1)", (ROWS, ROWS), "reduction"),
        Entry("PairwiseDistance", "nn.PairwiseDistance()", (ROWS, ROWS), "reduction"),
        Entry("PixelShuffle", "nn.PixelShuffle(2)", (X2,), "layout"),
        Entry("PixelUnshuffle", "nn.PixelUnshuffle(2)", (X2,), "layout"),
        Entry("Upsample", "nn.Upsample(scale_factor=2, mode='nearest')", (X2,), "layout"),
        Entry("UpsamplingBilinear2d", "nn.UpsamplingBilinear2d(scale_factor=2)", (X2,), "layout"),
        Entry("ReflectionPad2d", "nn.ReflectionPad2d(2)", (X2,), "layout"),
        Entry("ReplicationPad2d", "nn.ReplicationPad2d(2)", (X2,), "layout"),
        Entry("ZeroPad2d", "nn.ZeroPad2d(2)", (X2,), "layout"),
        Entry("Unfold", "nn.Unfold(kernel_size=2)", (X2,), "layout"),
        Entry("Flatten", "nn.Flatten()", (X2,), "layout"),
    ]
}


LIBRARIES = (*CATALOGUE, *harvest_libraries.LICENCES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder the task modules are written to")
    parser.add_argument("--library", nargs="+", default=list(CATALOGUE), choices=list(LIBRARIES))
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    args = parser.parse_args(argv)
    refused: list[Refusal] = []
    written = write(args.out, args.library, args.sizes, refused)
    print(f"wrote {len(written)} tasks to {args.out}", file=sys.stderr)
    reasons = collections.Counter(r.reason.split(":")[0][:80] for r in refused)
    for reason, count in reasons.most_common(10):
        print(f"refused {count}: {reason}", file=sys.stderr)
    return 0


@dataclass(frozen=True)
class Harvested:
    """One harvested task: its name, module source, library, origin (`library.Module:size`) and op family."""

    name: str
    source: str
    library: str
    origin: str
    family: str


@dataclass(frozen=True)
class Refusal:
    """A block of a library that was not harvested, and why."""

    library: str
    what: str
    reason: str


def harvest(libraries: list[str], sizes: list[str], refused: list[Refusal] | None = None) -> list[Harvested]:
    """Every catalogued module of `libraries` at every size of `sizes`, as task sources; the blocks that could not
    be harvested are added to `refused`."""
    made = []
    for library in libraries:
        if library not in LIBRARIES:
            raise ValueError(f"no catalogue for library {library!r}; known: {', '.join(LIBRARIES)}")
        if library not in CATALOGUE:
            made.extend(_from_source(library, sizes, refused if refused is not None else []))
            continue
        top = library.split(".")[0]
        version, licence = importlib.metadata.version(top), LICENCES[top]
        for entry in CATALOGUE[library]:
            for size in sizes:
                name = f"{library.replace('.', '_')}_{entry.module}_{size}"
                source = task_source(library, version, licence, entry, size)
                made.append(Harvested(name, source, library, f"{library}.{entry.module}:{size}", entry.family))
    return made


def _from_source(library: str, sizes: list[str], refused: list[Refusal]) -> list[Harvested]:
    """The tasks of a library whose blocks' source the tasks carry (`training.harvest_libraries`)."""
    blocks, failed = harvest_libraries.blocks(library)
    refused.extend(Refusal(library, what, reason) for what, reason in failed)
    made, origins = [], {}
    for task in harvest_libraries.harvest(blocks, sizes):
        block = task.block
        name = f"{library}_{block.module}_{task.size}"
        task_refused = task.refused
        if not task_refused and origins.setdefault(name, block.path) != block.path:
            task_refused = f"the class name is taken: {origins[name]}.{block.module} was harvested first"
        if task_refused:
            if task.size == sizes[0]:
                refused.append(Refusal(library, f"{block.path}.{block.module}", task_refused))
            continue
        made.append(Harvested(name, task.source, library, f"{library}.{block.module}:{task.size}", block.family))
    return made


def write(out: Path, libraries: list[str], sizes: list[str], refused: list[Refusal] | None = None) -> list[Path]:
    """The harvested tasks written to `out` as `<name>.py`, and the refusals, if any, to `out/refused.json`; the
    tasks' paths."""
    out.mkdir(parents=True, exist_ok=True)
    refused = refused if refused is not None else []
    paths = []
    for task in harvest(libraries, sizes, refused):
        path = out / f"{task.name}.py"
        path.write_text(task.source)
        paths.append(path)
    if refused:
        rows = [{"library": r.library, "what": r.what, "reason": r.reason} for r in refused]
        (out / "refused.json").write_text(json.dumps(rows, indent=1) + "\n")
    return paths


def task_source(library: str, version: str, licence: str, entry: Entry, size: str) -> str:
    """The KernelBench module of `entry` at `size`: the size symbols it uses as constants, the module built in
    `Model.__init__`, `forward` calling it on the inputs."""
    text = " ".join((entry.build, *entry.inputs))
    symbols = task_text.size_constants(SIZES[size], text)
    arguments = ", ".join(f"x{index}" for index in range(len(entry.inputs)))
    return f'''"""{library}.{entry.module} from {library.split(".")[0]} {version} ({licence}), at the `{size}` sizes of
training.harvest: built with its documented defaults."""

import torch
import torch.nn as nn

{chr(10).join(symbols)}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = {entry.build}

    def forward(self, {arguments}):
        return self.block({arguments})


{task_text.input_functions(entry.inputs)}'''


if __name__ == "__main__":
    sys.exit(main())
