"""Tasks whose code is a third-party library's own source: transformers, timm and torchvision building blocks.

For each catalogued block `harvest_source.closure` extracts the block's source with its dependency closure; a
transformers block gets a `types.SimpleNamespace` stand-in holding just the config attributes it read (recorded while
the library's own block ran, from the library's config class built with its defaults, sized by the tier), so a task
imports torch and nothing else. The task is kept only if, on the `small` inputs on a CPU in eval mode, it computes
what the library computes (same shapes, `torch.allclose`, after copying the library block's `state_dict`); every
block that fails any step is refused with its reason.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import pkgutil
import re
import types
from dataclasses import dataclass, replace

import torch

from training import harvest_source, task_text

LICENCES = {"transformers": "Apache-2.0", "timm": "Apache-2.0", "torchvision": "BSD-3-Clause"}
SIZES = {
    "small": {"B": 2, "S": 8, "E": 32, "NH": 4, "KV": 2, "HD": 8, "I": 64, "C": 8, "H": 8, "W": 8},
    "medium": {"B": 8, "S": 64, "E": 256, "NH": 8, "KV": 4, "HD": 32, "I": 688, "C": 64, "H": 32, "W": 32},
    "large": {"B": 16, "S": 256, "E": 1024, "NH": 16, "KV": 8, "HD": 64, "I": 2816, "C": 256, "H": 56, "W": 56},
}
CONFIG_SIZES = {
    "hidden_size": "E",
    "intermediate_size": "I",
    "num_attention_heads": "NH",
    "num_key_value_heads": "KV",
    "head_dim": "HD",
}
CONFIG_FIXED = {"num_hidden_layers": 2, "attention_dropout": 0.0, "hidden_dropout_prob": 0.0}
# Config fields that make a block random in training mode (dropout, dropped layers or paths): set to 0, because the
# verifier compares outputs and a task is called as built, in training mode.
MAX_CONFIG_CLASSES = 8  # config classes tried for a block (a module names a few; a composite config adds its parts)
RANDOM_CONFIG = re.compile(r"dropout|pdrop|drop_prob|layerdrop|drop_path|drop_rate")
SUFFIXES = ("RMSNorm", "LayerNorm", "Norm", "MLP", "Attention", "DecoderLayer", "Layer", "Block", "RotaryEmbedding")
PLAIN = {"RMSNorm": "norm", "LayerNorm": "norm", "Norm": "norm", "MLP": "gemm"}
SIZE_NAMES = {
    "config": "config",
    "layer_idx": "0",
    "intermediate_size": "I",
    "hidden_size": "E",
    "dim": "E",
    "d_model": "E",
    "embed_dim": "E",
}
HIDDEN = "torch.randn(B, S, E)"
POSITIONS = "torch.arange(S).expand(B, S)"
HEADS = "torch.randn(B, NH, S, HD)"
CACHES = ("Cache", "DynamicCache", "EncoderDecoderCache", "StaticCache", "HybridCache", "SlidingWindowCache")
TRANSFORMERS_SUBSTITUTES = {
    "logger": "import logging\nlogger = logging.getLogger(__name__)",
    "GradientCheckpointingLayer": "GradientCheckpointingLayer = nn.Module",
    "ROPE_INIT_FUNCTIONS": "ROPE_INIT_FUNCTIONS = {}",
    **{name: f'class {name}:\n    """Stand-in: the task passes no cache."""' for name in CACHES},
    "ALL_ATTENTION_FUNCTIONS": (
        "class ALL_ATTENTION_FUNCTIONS:\n    @staticmethod\n    def get_interface(implementation, default):\n"
        "        return default"
    ),
}
MAX_ERROR = 1e-5
IMAGE = "torch.randn(B, C, H, W)"
# A conv layer called on hidden states says so; it is then called on an input of its first convolution's channels and
# these spatial sizes (per number of spatial dims: a 1-D sequence long enough for an audio model's 10-tap kernel).
CONV_CHANNELS = re.compile(r"expected input\[[\d, ]+\] to have \d+ channels")
CONV_EXTENTS = {1: "4 * S", 2: "H, W", 3: "4, H, W"}


def _plain_block(library: str, spec: str, build: str, image: bool, family: str) -> Block:
    """A block built as `build` (size symbols allowed) and called on one activation: an image or a token sequence."""
    path, _, name = spec.partition(":")
    forward = "out = self.block(x0)\nreturn out[0] if isinstance(out, tuple) else out"
    inputs = (IMAGE if image else HIDDEN,)
    return Block(library, name, path, (spec,), f"self.block = {build}", forward, inputs, family)


TIMM = [
    ("timm.layers.mlp:Mlp", "Mlp(E)", False, "gemm"),
    ("timm.layers.mlp:GluMlp", "GluMlp(E, I)", False, "gemm"),
    ("timm.layers.mlp:SwiGLU", "SwiGLU(E, I)", False, "gemm"),
    ("timm.layers.mlp:ConvMlp", "ConvMlp(C)", True, "conv"),
    ("timm.layers.norm:LayerNorm2d", "LayerNorm2d(C)", True, "norm"),
    ("timm.layers.norm:RmsNorm", "RmsNorm(E)", False, "norm"),
    ("timm.layers.norm:GroupNorm1", "GroupNorm1(C)", True, "norm"),
    ("timm.layers.squeeze_excite:SEModule", "SEModule(C)", True, "attention"),
    ("timm.layers.squeeze_excite:EffectiveSEModule", "EffectiveSEModule(C)", True, "attention"),
    ("timm.layers.attention:Attention", "Attention(E, num_heads=NH)", False, "attention"),
    ("timm.models.vision_transformer:Block", "Block(E, NH)", False, "attention"),
    ("timm.models.convnext:ConvNeXtBlock", "ConvNeXtBlock(C)", True, "conv"),
]
TORCHVISION = [
    ("torchvision.ops.misc:SqueezeExcitation", "SqueezeExcitation(C, C // 4)", True, "attention"),
    ("torchvision.ops.misc:Conv2dNormActivation", "Conv2dNormActivation(C, C)", True, "conv"),
    ("torchvision.ops.misc:FrozenBatchNorm2d", "FrozenBatchNorm2d(C)", True, "norm"),
    ("torchvision.ops.stochastic_depth:StochasticDepth", "StochasticDepth(0.1, 'row')", True, "layout"),
    ("torchvision.models.resnet:BasicBlock", "BasicBlock(C, C)", True, "conv"),
    ("torchvision.models.resnet:Bottleneck", "Bottleneck(C, C // 4)", True, "conv"),
    ("torchvision.models.mobilenetv2:InvertedResidual", "InvertedResidual(C, C, 1, 4)", True, "conv"),
    ("torchvision.models.convnext:CNBlock", "CNBlock(C, 1e-6, 0.0)", True, "conv"),
    ("torchvision.models.vision_transformer:MLPBlock", "MLPBlock(E, I, 0.0)", False, "gemm"),
    ("torchvision.models.vision_transformer:EncoderBlock", "EncoderBlock(NH, E, I, 0.0, 0.0)", False, "attention"),
]


def blocks(library: str) -> tuple[list[Block], list[tuple[str, str]]]:
    """The catalogued blocks of `library` and `(what, reason)` for what could not be catalogued."""
    if importlib.util.find_spec(library) is None:
        return [], [(library, f"{library} is not installed")]
    if library == "transformers":
        return transformers_blocks()
    table = {"timm": TIMM, "torchvision": TORCHVISION}[library]
    made, refused = [], []
    for spec, build, image, family in table:
        try:
            _load(spec)
        except Exception as error:
            refused.append((spec, f"import failed: {type(error).__name__}: {error}"[:200]))
            continue
        made.append(_plain_block(library, spec, build, image, family))
    return made, refused


@dataclass(frozen=True)
class Block:
    """A block to harvest: objects whose source the task carries, the model's `__init__` and `forward` bodies."""

    library: str
    module: str
    path: str
    objects: tuple[str, ...]
    init: str
    forward: str
    inputs: tuple[str, ...]
    family: str
    config: str = ""


@dataclass(frozen=True)
class Made:
    """A harvested task source, or the reason the block was refused."""

    block: Block
    size: str
    source: str = ""
    refused: str = ""


def families() -> list[str]:
    """The model families of the installed transformers (`transformers.models.*` with a `modeling_*` module)."""
    import transformers.models

    return [m.name for m in pkgutil.iter_modules(transformers.models.__path__) if m.ispkg]


def transformers_blocks(family_names: list[str] | None = None) -> tuple[list[Block], list[tuple[str, str]]]:
    """The catalogued blocks of transformers' model families (norms, MLPs, attention, decoder layers, rotary
    embeddings), and `(family, reason)` for families whose modeling module cannot be imported."""
    from transformers.utils import logging

    logging.set_verbosity_error()
    blocks, refused = [], []
    for family in family_names if family_names is not None else families():
        path = f"transformers.models.{family}.modeling_{family}"
        try:
            module = importlib.import_module(path)
        except Exception as error:
            refused.append((path, f"import failed: {type(error).__name__}: {error}"[:200]))
            continue
        blocks.extend(_family_blocks(module, path))
    return blocks, refused


def _family_blocks(module: types.ModuleType, path: str) -> list[Block]:
    names = vars(module)
    classes = {
        name: value
        for name, value in names.items()
        if inspect.isclass(value) and value.__module__ == path and issubclass(value, torch.nn.Module)
    }
    rotary = next((n for n in classes if n.endswith("RotaryEmbedding") and n[0].isupper()), None)
    made = []
    for name in sorted(classes):
        suffix = next((s for s in SUFFIXES if name.endswith(s)), None)
        build = _build(classes[name], name)
        if suffix is None or build is None:
            continue
        block = _block(
            name,
            suffix,
            build,
            path,
            rotary,
            "apply_rotary_pos_emb" in names,
            _keywords(classes[name], rotary is not None),
            _rotary_layer_type(classes[rotary]) if rotary else "",
        )
        if block is not None:
            made.append(block)
    return made


def _build(cls: type, name: str) -> str | None:
    """`Name(args)` from the required parameters of `cls.__init__`, each a config, layer index or size; None if
    some required parameter is none of these."""
    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    arguments = []
    for parameter in parameters:
        optional = parameter.default is not parameter.empty and parameter.name != "layer_idx"
        if optional or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.name not in SIZE_NAMES:
            return None
        arguments.append(f"{parameter.name}={SIZE_NAMES[parameter.name]}")
    return f"{name}({', '.join(arguments)})"


def _keywords(cls: type, rotary: bool) -> str:
    """`, name=value` for each of attention mask, position embeddings and ids that `cls.forward` names (the last two
    only where the family has a rotary embedding); a cross-attention block (`Cross` in its name) attends to the
    hidden states themselves as its encoder's or key-value states."""
    try:
        parameters = inspect.signature(cls.forward).parameters
    except (TypeError, ValueError):
        return ""
    known = {"position_embeddings": "(cos, sin)", "attention_mask": "None", "position_ids": "x1"}
    if not rotary:
        known = {"attention_mask": "None"}
    if "Cross" in cls.__name__:
        known |= {"encoder_hidden_states": "x0", "key_value_states": "x0"}
    return "".join(f", {name}={value}" for name, value in known.items() if name in parameters)


def _rotary_layer_type(cls: type) -> str:
    """`, LAYER_TYPE` where the family's rotary embedding takes the kind of layer it serves (one table of
    frequencies per kind: Gemma 3's sliding and full attention): the first layer's kind, as the config lists them."""
    try:
        parameter = inspect.signature(cls.forward).parameters.get("layer_type")
    except (TypeError, ValueError):
        return ""
    return ", config.layer_types[0]" if parameter is not None and parameter.default is parameter.empty else ""


def _block(
    name: str,
    suffix: str,
    build: str,
    path: str,
    rotary: str | None,
    has_apply: bool,
    keywords: str,
    layer_type: str = "",
) -> Block | None:
    """The block of class `name`: a norm or MLP called on hidden states; attention or a layer called on hidden
    states with the family's rotary embedding, if it has one; the rotary embedding applied to queries and keys."""
    config = "config" if "config=config" in build else ""
    objects, init = (f"{path}:{name}",), f"self.block = {build}"
    if suffix in PLAIN:
        forward = "return self.block(x0)"
        return Block("transformers", name, path, objects, init, forward, (HIDDEN,), PLAIN[suffix], config)
    if not config:
        return None
    if suffix == "RotaryEmbedding":
        if name != rotary or not has_apply:
            return None
        forward = f"cos, sin = self.block(x0, x2{layer_type})\nreturn apply_rotary_pos_emb(x0, x1, cos, sin)"
        objects = (*objects, f"{path}:apply_rotary_pos_emb")
        return Block("transformers", name, path, objects, init, forward, (HEADS, HEADS, POSITIONS), "rotary", config)
    first = "return out[0] if isinstance(out, tuple) else out"
    if rotary is None:
        forward = f"out = self.block(x0{keywords})\n{first}"
        return Block("transformers", name, path, objects, init, forward, (HIDDEN,), "attention", config)
    init = f"{init}\nself.rotary = {rotary}(config=config)"
    call = f"out = self.block(x0{keywords})"
    forward = f"cos, sin = self.rotary(x0, x1{layer_type})\n{call}\n{first}"
    objects = (*objects, f"{path}:{rotary}")
    return Block("transformers", name, path, objects, init, forward, (HIDDEN, POSITIONS), "attention", config)


def harvest(blocks: list[Block], sizes: list[str]) -> list[Made]:
    """Every block at every size of `sizes`: its task source, checked against the library on `small` inputs, or
    the reason it was refused."""
    made = []
    for block in blocks:
        try:
            made.extend(_harvest_block(block, sizes))
        except harvest_source.Refused as refusal:
            made.extend(Made(block, size, refused=str(refusal)) for size in sizes)
        except Exception as error:
            reason = f"{type(error).__name__}: {error}".splitlines()[0][:200]
            made.extend(Made(block, size, refused=reason) for size in sizes)
    return made


def _harvest_block(block: Block, sizes: list[str]) -> list[Made]:
    objects = [_load(spec) for spec in block.objects]
    substitutes = dict(TRANSFORMERS_SUBSTITUTES) if block.library == "transformers" else {}
    called, config_class, recorder, library_model = _built(block, objects)
    if recorder is not None:
        substitutes.update(_activation_substitute(recorder, objects))
    found = harvest_source.closure(objects, called.library, substitutes)
    version = importlib.metadata.version(called.library)
    sources = {}
    for size in ("small", *[s for s in sizes if s != "small"]):
        attributes = _attributes(config_class, size, recorder)
        sources[size] = task_source(called, found, attributes, size, version)
    _check(called, sources["small"], library_model)
    if called.inputs != block.inputs and "medium" in sources:  # called on inputs of its own: do they follow the tier?
        _check_runs(called, sources["medium"])
    return [Made(called, size, source=sources[size]) for size in sizes]


def _load(spec: str) -> object:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _built(block: Block, objects: list[object]) -> tuple[Block, type | None, _Recorder | None, torch.nn.Module]:
    """The library's block built and run once on `small` inputs, with the first config class under which it runs
    (`_config_classes`), recording what it reads of it; the first class's error where none does. A block whose
    first convolution refused the hidden states it was called on (a conv layer of an audio or vision model) is
    called on an input shaped for that convolution instead, and returned so changed."""
    if not block.config:
        return block, None, None, _library_model(block, objects, None)
    first_error: Exception | None = None
    for config_class in _config_classes(block):
        try:
            recorder = _Recorder(_config(config_class, "small"))
            return block, config_class, recorder, _library_model(block, objects, recorder)
        except Exception as error:
            first_error = first_error or error
            conv_first = _conv_first(block, objects, config_class) if CONV_CHANNELS.search(str(error)) else None
        if conv_first is not None:
            try:
                recorder = _Recorder(_config(config_class, "small"))
                return conv_first, config_class, recorder, _library_model(conv_first, objects, recorder)
            except Exception:
                pass
    assert first_error is not None
    raise first_error


def _conv_first(block: Block, objects: list[object], config_class: type) -> Block | None:
    """`block` called on one input shaped for its first convolution (its input channels, then 1-3 spatial sizes),
    or None where it has none. The channels are the tier's `E` or `C` where the small config's match them, else the
    config's own number."""
    model, _ = _constructed(block, objects, _Recorder(_config(config_class, "small")))
    conv = next((m for m in model.modules() if isinstance(m, torch.nn.modules.conv._ConvNd)), None)
    if conv is None or conv.transposed or len(conv.kernel_size) not in CONV_EXTENTS:
        return None
    small = SIZES["small"]
    channels = next((name for name in ("E", "C") if small[name] == conv.in_channels), str(conv.in_channels))
    expression = f"torch.randn(B, {channels}, {CONV_EXTENTS[len(conv.kernel_size)]})"
    return replace(block, inputs=(expression,), family="conv")


def _check_runs(block: Block, source: str) -> None:
    """Refuse unless the task at another tier builds and runs (a conv-first block's channels follow the tier only
    where they are the config's sized fields)."""
    module = types.ModuleType(f"harvested_{block.module}")
    try:
        exec(compile(source, module.__name__, "exec"), module.__dict__)
        with torch.no_grad():
            module.Model().eval()(*module.get_inputs())
    except Exception as error:
        raise harvest_source.Refused(f"at a larger tier: {type(error).__name__}: {error}"[:200]) from error


def _config(config_class: type, size: str) -> object:
    """The library's config class at its defaults with the tier's sizes."""
    default = config_class()
    values = SIZES[size]
    kwargs = {key: values[symbol] for key, symbol in CONFIG_SIZES.items() if hasattr(default, key)}
    kwargs.update({key: value for key, value in CONFIG_FIXED.items() if hasattr(default, key)})
    config = config_class(**kwargs)
    config._attn_implementation = "eager"
    for key, value in vars(config).items():
        if isinstance(value, float) and RANDOM_CONFIG.search(key):
            setattr(config, key, 0.0)
    return config


def _config_classes(block: Block) -> list[type]:
    """The config classes to build the block with, in order: the one its `__init__` annotates `config` with, the
    others its module names, each composite one followed by its parts (a vision, text or Q-Former config: a
    composite config has no `hidden_size` of its own); at most MAX_CONFIG_CLASSES."""
    from transformers import PreTrainedConfig

    def is_config(value: object) -> bool:
        return inspect.isclass(value) and issubclass(value, PreTrainedConfig) and value is not PreTrainedConfig

    module = importlib.import_module(block.path)
    cls = vars(module)[block.module]
    annotation = inspect.signature(cls.__init__).parameters["config"].annotation
    annotation = vars(module).get(annotation) if isinstance(annotation, str) else annotation
    named = ([annotation] if is_config(annotation) else []) + [v for v in vars(module).values() if is_config(v)]
    ordered: list[type] = []
    for config_class in named:
        parts = [p for p in getattr(config_class, "sub_configs", {}).values() if is_config(p)]
        ordered.extend(c for c in [config_class, *parts] if c not in ordered)
    if not ordered:
        raise harvest_source.Refused(f"{block.path} names no config class")
    return ordered[:MAX_CONFIG_CLASSES]


class _Recorder:
    """A config that records the names of the attributes read from it."""

    def __init__(self, config: object) -> None:
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_read", {})

    def __getattr__(self, name: str) -> object:
        value = getattr(object.__getattribute__(self, "_config"), name)
        object.__getattribute__(self, "_read")[name] = value
        return value


def _library_model(block: Block, objects: list[object], recorder: _Recorder | None) -> torch.nn.Module:
    """The task's `Model`, built over the library's own objects (recording its config reads), run once."""
    model, namespace = _constructed(block, objects, recorder)
    with torch.no_grad():
        model(*_inputs(block, namespace))
    return model


def _constructed(block: Block, objects: list[object], recorder: _Recorder | None) -> tuple[torch.nn.Module, dict]:
    namespace = {"torch": torch, "nn": torch.nn, "config": recorder, **SIZES["small"]}
    namespace.update({obj.__name__: obj for obj in objects})
    exec(compile(_model_text(block), f"<{block.module}>", "exec"), namespace)
    torch.manual_seed(0)
    return namespace["Model"]().eval(), namespace


def _activation_substitute(recorder: _Recorder, objects: list[object]) -> dict[str, str]:
    """`ACT2FN` (instances) and `ACT2CLS` (classes, which a block instantiates itself) as dicts holding just the
    activations the config names, their classes added to `objects`; `ACT2CLS` without those that take arguments."""
    from transformers.activations import ACT2CLS

    read = object.__getattribute__(recorder, "_read")
    instances, classes = [], []
    for key, name in read.items():
        if "act" in key and isinstance(name, str) and name in ACT2CLS:
            cls, kwargs = ACT2CLS[name] if isinstance(ACT2CLS[name], tuple) else (ACT2CLS[name], {})
            objects.insert(0, cls)
            arguments = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            instances.append(f"{name!r}: {cls.__name__}({arguments})")
            if not kwargs:
                classes.append(f"{name!r}: {cls.__name__}")
    substitutes = {"ACT2FN": "ACT2FN = {" + ", ".join(instances) + "}"} if instances else {}
    if classes:
        substitutes["ACT2CLS"] = "ACT2CLS = {" + ", ".join(classes) + "}"
    return substitutes


def _attributes(config_class: type | None, size: str, recorder: _Recorder | None) -> dict[str, object]:
    """The config attributes the block read, with the values of the tier's config."""
    if config_class is None or recorder is None:
        return {}
    config = _config(config_class, size)
    values = {name: getattr(config, name) for name in object.__getattribute__(recorder, "_read")}
    for name, value in values.items():
        if not _plain(value):
            raise harvest_source.Refused(f"config attribute {name!r} is a {type(value).__name__}, not a plain value")
    return values


def _plain(value: object) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return isinstance(value, harvest_source.CONSTANTS)


def _inputs(block: Block, namespace: dict) -> list[torch.Tensor]:
    torch.manual_seed(1)
    return [eval(expression, namespace) for expression in block.inputs]


def _model_text(block: Block) -> str:
    arguments = ", ".join(f"x{index}" for index in range(len(block.inputs)))
    init = "\n        ".join(block.init.splitlines())
    forward = "\n        ".join(block.forward.splitlines())
    return f"""class Model(nn.Module):
    def __init__(self):
        super().__init__()
        {init}

    def forward(self, {arguments}):
        {forward}
"""


def task_source(
    block: Block, found: harvest_source.Closure, attributes: dict[str, object], size: str, version: str
) -> str:
    """The task module: docstring with provenance, the extracted source, the config stand-in, sizes, `Model`."""
    licence = LICENCES[block.library]
    imports = list(dict.fromkeys(["import torch", "from torch import nn", *found.imports]))
    if block.config:
        imports.append("from types import SimpleNamespace")
    text = " ".join((*block.inputs, block.init))
    symbols = task_text.size_constants(SIZES[size], text)
    config = ""
    if block.config:
        fields = ",\n    ".join(f"{name}={value!r}" for name, value in sorted(attributes.items()))
        config = f"config = SimpleNamespace(\n    {fields},\n)\n" if fields else "config = SimpleNamespace()\n"
    names = " + ".join(spec.partition(":")[2] for spec in block.objects)
    return f'''"""{names} from {block.library} {version} ({licence}), module {block.path}, at the `{size}` sizes of
training.harvest. The code below the imports is the library's own source ({licence}), extracted with what it needs;
a config is a stand-in holding just the attributes the block reads, from the library's config defaults."""

{chr(10).join(imports)}


{(chr(10) * 3).join(found.definitions)}


{config}{chr(10).join(symbols)}


{_model_text(block)}

{task_text.input_functions(block.inputs)}'''


def _check(block: Block, source: str, library_model: torch.nn.Module) -> None:
    """Refuse unless the task's `Model` with the library's weights computes the library's outputs on `small`."""
    module = types.ModuleType(f"harvested_{block.module}")
    exec(compile(source, module.__name__, "exec"), module.__dict__)
    task_model = module.Model().eval()
    missing = task_model.load_state_dict(library_model.state_dict(), strict=False)
    if missing.missing_keys or missing.unexpected_keys:
        raise harvest_source.Refused(f"state_dict differs: {missing}")
    with torch.no_grad():
        torch.manual_seed(1)
        task_inputs = module.get_inputs()
        expected = library_model(*[x.clone() for x in task_inputs])
        got = task_model(*task_inputs)
    for want, have in zip(_leaves(expected), _leaves(got), strict=True):
        if want.shape != have.shape or not torch.allclose(want, have, atol=MAX_ERROR, rtol=MAX_ERROR):
            raise harvest_source.Refused("extracted source computes something else than the library")


def _leaves(output: object) -> list[torch.Tensor]:
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (tuple, list)):
        return [leaf for item in output for leaf in _leaves(item)]
    if output is None:
        return []
    raise harvest_source.Refused(f"output is a {type(output).__name__}, not tensors")
