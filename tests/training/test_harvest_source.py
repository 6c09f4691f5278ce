"""`training.harvest_source` and `training.harvest_libraries`: a library block's source extracted with what it needs,
refused with a reason when it cannot stand alone, and harvested tasks that compute what the library computes."""

from __future__ import annotations

import ast
import json
import types
from pathlib import Path

import pytest
import torch

from training import data, harvest, harvest_libraries, harvest_source
from verifier import Task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LLAMA = "transformers.models.llama.modeling_llama"


@pytest.fixture
def fakelib(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    import harvest_fakelib.blocks

    return harvest_fakelib.blocks


def test_closure_carries_helpers_and_constants_in_order_and_computes_the_same(fakelib):
    found = harvest_source.closure([fakelib.Scaled], "harvest_fakelib", {})
    source = found.source()
    assert "SCALE = 2.0" in source and "import math" in source
    assert "import torch.nn.functional as F" in source and "from torch import nn" in source
    assert source.index("SCALE = 2.0") < source.index("def double") < source.index("class Scaled")
    assert "@register" not in source and "harvest_fakelib" not in source
    namespace: dict = {}
    exec(compile(source, "closure", "exec"), namespace)
    torch.manual_seed(0)
    library, extracted = fakelib.Scaled(4), namespace["Scaled"](4)
    extracted.load_state_dict(library.state_dict())
    x = torch.randn(3, 4)
    assert torch.equal(library(x), extracted(x))


def test_a_block_reading_a_registry_is_refused_with_the_name(fakelib):
    with pytest.raises(harvest_source.Refused, match="'REGISTRY' is a dict"):
        harvest_source.closure([fakelib.FromRegistry], "harvest_fakelib", {})


def test_a_substitute_stands_in_for_a_name_the_library_cannot_give(fakelib):
    found = harvest_source.closure([fakelib.FromRegistry], "harvest_fakelib", {"REGISTRY": "REGISTRY = {}"})
    assert "REGISTRY = {}" in found.definitions


def test_a_closure_past_its_depth_bound_is_refused(fakelib, monkeypatch):
    monkeypatch.setattr(harvest_source, "MAX_DEPTH", 0)
    with pytest.raises(harvest_source.Refused, match="deeper than 0"):
        harvest_source.closure([fakelib.Scaled], "harvest_fakelib", {})


@pytest.fixture(scope="module")
def llama_tasks():
    blocks, refused = harvest_libraries.transformers_blocks(["llama"])
    assert refused == []
    return {(made.block.module, made.size): made for made in harvest_libraries.harvest(blocks, ["small", "large"])}


def test_llama_blocks_become_self_contained_tasks_that_say_where_they_came_from(llama_tasks, tmp_path):
    import transformers

    wanted = {"LlamaRMSNorm", "LlamaMLP", "LlamaAttention", "LlamaDecoderLayer", "LlamaRotaryEmbedding"}
    assert {name for (name, size), made in llama_tasks.items() if made.source and size == "small"} == wanted
    for name in wanted:
        source = llama_tasks[name, "small"].source
        assert f"from transformers {transformers.__version__} (Apache-2.0), module {LLAMA}" in source
        assert _imported(source) <= {"torch", "types", "math", "collections", "typing", "logging"}, name
        path = tmp_path / f"transformers_{name}_small.py"
        path.write_text(source)
        assert Task.from_file(path).digest


def test_a_harvested_decoder_layer_computes_what_llama_computes(llama_tasks):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    task = _load(llama_tasks["LlamaDecoderLayer", "small"].source)
    sizes = harvest_libraries.SIZES["small"]
    config = LlamaConfig(
        hidden_size=sizes["E"],
        intermediate_size=sizes["I"],
        num_attention_heads=sizes["NH"],
        num_key_value_heads=sizes["KV"],
        head_dim=sizes["HD"],
    )
    config._attn_implementation = "eager"
    layer, rotary = LlamaDecoderLayer(config, layer_idx=0).eval(), LlamaRotaryEmbedding(config)
    model = task.Model().eval()
    model.block.load_state_dict(layer.state_dict())
    hidden, positions = task.get_inputs()
    with torch.no_grad():
        expected = layer(hidden, position_embeddings=rotary(hidden, positions), attention_mask=None)
        got = model(hidden, positions)
    expected = expected[0] if isinstance(expected, tuple) else expected
    assert got.shape == (sizes["B"], sizes["S"], sizes["E"]) and torch.allclose(got, expected, atol=1e-6)


@pytest.mark.slow
def test_harvested_llama_blocks_become_verified_pairs(llama_tasks, tmp_path):
    """The library's own source through the real pipeline: the candidate's constructor needs the carried classes and
    config (in forms the verifier's allowlist accepts), and the rotary block's position ids are an expanded input."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("LlamaRMSNorm", "LlamaRotaryEmbedding", "LlamaMLP"):
        (tasks / f"transformers_{name}_small.py").write_text(llama_tasks[name, "small"].source)
    out = tmp_path / "out"
    flags = ["--output-dir", str(out), "--tasks", str(tasks), "--device", "cpu", "--trials", "2"]
    assert data.main([*flags, "--test-fraction", "0", "--val-fraction", "0"]) == 0
    pairs = [json.loads(line) for line in (out / "sft.autotriton.jsonl").read_text().splitlines()]
    assert sorted(p["task_origin"].rsplit("/", 1)[-1] for p in pairs) == sorted(x.name for x in tasks.iterdir())
    assert all(p["report"]["verdict"] == "correct" and p["report"]["reward"] == 1.0 for p in pairs)
    kernel = next(p["completion"][0]["content"] for p in pairs if "RMSNorm" in p["task_origin"])
    assert "class LlamaRMSNorm(nn.Module):" in kernel and "def forward(self, hidden_states)" not in kernel


def test_a_block_with_dropout_in_its_config_gives_one_output_in_training_mode():
    """ESM's config defaults to dropout 0.1 in attention and hidden layers: the task zeroes it, because the verifier
    calls a task as built (in training mode) and compares outputs."""
    blocks, _ = harvest_libraries.transformers_blocks(["esm"])
    (made,) = [m for m in harvest_libraries.harvest(blocks, ["small"]) if m.block.module == "EsmSelfAttention"]
    task = _load(made.source)
    model, inputs = task.Model(), task.get_inputs()
    assert model.training and "attention_probs_dropout_prob=0.0" in made.source
    assert torch.equal(model(*inputs), model(*inputs))


def test_a_block_of_a_composite_config_is_built_with_the_part_it_runs_under():
    """BLIP-2's model config holds a vision and a Q-Former config and has no `hidden_size` of its own: its attention
    block is built with the first part under which it runs, and its task holds that part's sizes."""
    blocks, _ = harvest_libraries.transformers_blocks(["blip_2"])
    (block,) = [b for b in blocks if b.module == "Blip2Attention"]
    names = [c.__name__ for c in harvest_libraries._config_classes(block)]
    assert names[0] == "Blip2Config" and "Blip2VisionConfig" in names
    (made,) = harvest_libraries.harvest([block], ["small"])
    assert made.refused == "", made.refused
    task = _load(made.source)
    assert task.config.hidden_size == harvest_libraries.SIZES["small"]["E"]
    model, inputs = task.Model(), task.get_inputs()
    assert model(*inputs).shape == inputs[0].shape


def test_a_conv_layer_is_called_on_an_input_of_its_first_convolution():
    """HuBERT's feature encoder layers and ConvNeXt's stage layer refuse hidden states (batch, sequence, hidden):
    they are called on (batch, channels, length) audio or a (batch, channels, height, width) image instead, with
    the tier's channels where the config's follow the tier (ConvNeXt's `dim`), else the config's own (HuBERT's 1)."""
    blocks, _ = harvest_libraries.transformers_blocks(["hubert", "convnext"])
    chosen = [b for b in blocks if b.module in ("HubertGroupNormConvLayer", "ConvNextLayer")]
    made = {(m.block.module, m.size): m for m in harvest_libraries.harvest(chosen, ["small", "medium"])}
    assert all(m.refused == "" for m in made.values()), [m.refused for m in made.values()]
    audio, image = made["HubertGroupNormConvLayer", "medium"], made["ConvNextLayer", "medium"]
    assert audio.block.family == image.block.family == "conv"
    assert audio.block.inputs == ("torch.randn(B, 1, 4 * S)",) and image.block.inputs == ("torch.randn(B, E, H, W)",)
    for task in (_load(audio.source), _load(image.source)):
        (x,) = task.get_inputs()
        assert task.Model()(x).shape[0] == x.shape[0] == harvest_libraries.SIZES["medium"]["B"]


def test_a_rotary_embedding_with_a_table_per_kind_of_layer_serves_the_first_layer_s_kind():
    """Gemma 3's rotary embedding keeps frequencies for sliding and for full attention and must be told which: the
    task asks for the first layer's, and its config stand-in holds the layer kinds it read."""
    blocks, _ = harvest_libraries.transformers_blocks(["gemma3"])
    (block,) = [b for b in blocks if b.module == "Gemma3RotaryEmbedding"]
    assert "self.block(x0, x2, config.layer_types[0])" in block.forward
    (made,) = harvest_libraries.harvest([block], ["small"])
    assert made.refused == "", made.refused
    task = _load(made.source)
    assert task.config.layer_types[0] in ("sliding_attention", "full_attention")
    query, key, positions = task.get_inputs()
    rotated = task.Model()(query, key, positions)
    assert rotated[0].shape == query.shape and not torch.equal(rotated[0], query)


def test_a_block_that_instantiates_its_activation_class_and_a_cross_attention_block_are_harvested():
    """RT-DETR's RepVGG block builds `ACT2CLS[name]()` itself: the task holds just the activation class its config
    names. BERT's cross-attention attends to encoder states: the task passes the hidden states as those."""
    blocks, _ = harvest_libraries.transformers_blocks(["rt_detr", "bert"])
    chosen = [b for b in blocks if b.module in ("RTDetrRepVggBlock", "BertCrossAttention")]
    made = {m.block.module: m for m in harvest_libraries.harvest(chosen, ["small"])}
    assert all(m.refused == "" for m in made.values()), {k: m.refused for k, m in made.items()}
    assert "ACT2CLS = {" in made["RTDetrRepVggBlock"].source
    assert "encoder_hidden_states=x0" in made["BertCrossAttention"].source
    for m in made.values():
        task = _load(m.source)
        (x,) = task.get_inputs()
        assert task.Model()(x).shape[0] == x.shape[0]


def test_the_size_tier_sets_the_config_and_the_inputs(llama_tasks):
    small, large = (_load(llama_tasks["LlamaMLP", size].source) for size in ("small", "large"))
    assert small.config.hidden_size == small.E == harvest_libraries.SIZES["small"]["E"]
    assert large.config.hidden_size == large.E == harvest_libraries.SIZES["large"]["E"]
    assert large.config.intermediate_size == harvest_libraries.SIZES["large"]["I"]
    assert vars(small.config).keys() == vars(large.config).keys()


def test_source_that_computes_something_else_is_refused(llama_tasks, monkeypatch):
    block = llama_tasks["LlamaMLP", "small"].block
    original = harvest_libraries.task_source

    def broken(*args, **kwargs):
        return original(*args, **kwargs).replace("self.act_fn(self.gate_proj(x))", "self.gate_proj(x)")

    monkeypatch.setattr(harvest_libraries, "task_source", broken)
    (made,) = harvest_libraries.harvest([block], ["small"])
    assert made.source == "" and made.refused == "extracted source computes something else than the library"


def test_harvest_writes_the_refusals_beside_the_tasks_and_training_data_counts_them(tmp_path, monkeypatch):
    monkeypatch.setattr(harvest_libraries, "families", lambda: ["llama", "hubert"])
    paths = harvest.write(tmp_path / "tasks", ["transformers"], ["small"])
    names = {path.stem for path in paths}
    assert "transformers_LlamaMLP_small" in names and "transformers_HubertEncoderLayer_small" in names
    refused = json.loads((tmp_path / "tasks" / "refused.json").read_text())
    assert refused and all(row["library"] == "transformers" and row["reason"] for row in refused)
    assert any(row["what"].endswith("HubertEncoderStableLayerNorm") for row in refused)
    args = data.DataArgs(
        output_dir=str(tmp_path / "data"), harvest=["transformers"], harvest_sizes=["small"], sft=False
    )
    tasks, sheet = data.collect(args)
    assert sheet["harvested_by_library"] == {"transformers": len(paths)}
    assert sheet["tasks"]["harvest_refused"] == len(refused)
    assert "harvest:transformers.LlamaMLP:small" in {t.origin for t in tasks}


def test_a_second_block_of_the_same_class_name_is_refused_not_written_over_the_first(monkeypatch, tmp_path):
    """Task files are named by library, class and size: a class name that two modules define is harvested once.
    The library walk is replaced by two made tasks (the real walk is the transformers tests above)."""

    def made(path: str, source: str) -> harvest_libraries.Made:
        block = harvest_libraries.Block("transformers", "SharedNorm", path, (), "", "", ("x",), "norm")
        return harvest_libraries.Made(block, "small", source)

    monkeypatch.setattr(harvest_libraries, "blocks", lambda library: ([], []))
    first, second = made("family_a.modeling", "first = 1\n"), made("family_b.modeling", "second = 2\n")
    monkeypatch.setattr(harvest_libraries, "harvest", lambda blocks, sizes: [first, second])
    refused: list[harvest.Refusal] = []
    [path] = harvest.write(tmp_path, ["transformers"], ["small"], refused)
    assert path.name == "transformers_SharedNorm_small.py" and path.read_text() == "first = 1\n"
    [refusal] = refused
    assert refusal.what == "family_b.modeling.SharedNorm"
    assert refusal.reason == "the class name is taken: family_a.modeling.SharedNorm was harvested first"


@pytest.mark.parametrize("library", ["timm", "torchvision"])
def test_vision_libraries_harvest_tasks_that_load(library, tmp_path):
    pytest.importorskip(library)
    paths = harvest.write(tmp_path, [library], ["small"])
    assert paths
    for path in paths:
        assert Task.from_file(path).digest and f"from {library} " in path.read_text()


def _imported(source: str) -> set[str]:
    nodes = [node for node in ast.walk(ast.parse(source)) if isinstance(node, (ast.Import, ast.ImportFrom))]
    names = [alias.name for node in nodes if isinstance(node, ast.Import) for alias in node.names]
    return {name.split(".")[0] for name in names + [node.module for node in nodes if isinstance(node, ast.ImportFrom)]}


def _load(source: str) -> types.ModuleType:
    module = types.ModuleType("task")
    exec(compile(source, "task", "exec"), module.__dict__)
    return module
