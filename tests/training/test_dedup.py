"""Task identity ignores what does not change the code; contamination finds near copies of a suite's tasks."""

from __future__ import annotations

from training.dedup import Suite, computation_id, duplicate_key, model_ngrams, op_signature, task_id
from training.synth import generate

RELU = '''"""ReLU."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)  # the op


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
'''


def test_docstrings_comments_and_layout_do_not_change_a_tasks_id_and_code_does():
    reformatted = RELU.replace('"""ReLU."""', '"""Another description."""').replace("  # the op", "")
    reformatted = reformatted.replace("return torch.relu(x)", "return torch.relu(\n            x\n        )")
    assert task_id(reformatted) == task_id(RELU)
    assert task_id(RELU.replace("torch.randn(4, 8)", "torch.randn(4, 9)")) != task_id(RELU)
    assert len(task_id(RELU)) == 16


def test_a_tasks_id_is_the_same_on_every_python_version():
    """Ids name tasks in datasets built on one machine and used on another (the GPU box runs 3.12, CI 3.11),
    and a task's split follows from its id: this id was computed on Python 3.11 and must not change."""
    assert task_id(RELU) == "bd4cf89e86a24459"


def test_a_near_copy_of_a_suite_task_is_found_and_other_tasks_are_not(tmp_path):
    chain = generate(11).source
    (tmp_path / "suite_task.py").write_text(chain.replace("rows = ", "rows = 1 + "))
    (tmp_path / "broken.py").write_text("def (:\n")
    suite = Suite(tmp_path, n=12)
    assert suite.name == tmp_path.name and list(suite.tasks) == ["suite_task.py"]
    closest, share = suite.closest(chain)
    assert closest == "suite_task.py" and share == 1.0
    other = next(
        generate(seed).source for seed in range(100, 200) if generate(seed).description != generate(11).description
    )
    assert suite.closest(other)[1] < 0.5


def test_an_op_is_one_op_however_it_is_spelt():
    module = RELU.replace("torch.relu(x)", "self.act(x)").replace(
        "    def forward",
        "    def __init__(self):\n        super().__init__()\n        self.act = nn.ReLU()\n\n    def forward",
    )
    functional = RELU.replace("torch.relu(x)", "torch.nn.functional.relu(x)")
    assert op_signature(RELU) == op_signature(module) == op_signature(functional) == {"relu"}
    loss = RELU.replace("torch.relu(x)", "nn.CrossEntropyLoss()(x, x.argmax(1))")
    assert op_signature(loss) == {"crossentropy", "argmax"}
    assert op_signature(loss.replace("nn.CrossEntropyLoss()", "F.cross_entropy")) == op_signature(loss)
    assert op_signature(RELU.replace("torch.relu(x)", "x.view(x.size(0), -1).sum(1)")) == {"view", "sum"}


def test_a_task_computing_with_a_suite_task_s_ops_is_found_in_another_spelling(tmp_path):
    (tmp_path / "19_ReLU.py").write_text(RELU)
    (tmp_path / "23_Softmax.py").write_text(RELU.replace("torch.relu(x)", "torch.softmax(x, dim=1)"))
    suite = Suite(tmp_path, n=12, name="kernelbench-level1")
    harvested = RELU.replace("torch.relu(x)", "self.block(x)").replace(
        "    def forward",
        "    def __init__(self):\n        super().__init__()\n        self.block = nn.ReLU()\n\n    def forward",
    )
    assert suite.name == "kernelbench-level1"
    assert suite.same_ops(harvested) == "19_ReLU.py"
    assert suite.same_ops(RELU.replace("torch.relu(x)", "torch.relu(x).sum()")) is None


LIBRARY_BLOCK = '''"""A library block carried with its source."""
import torch
import torch.nn as nn


def scaled(x, scale):
    return torch.softmax(x * scale, dim=-1)


class Scorer(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return scaled(x, self.scale)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Scorer(0.5)

    def forward(self, x):
        return self.block(x)


def get_inputs():
    return [torch.randn(4, 8)]
'''


def test_a_wrapped_block_is_read_through_its_wrapper_and_its_own_names_read_alike(tmp_path):
    assert op_signature(LIBRARY_BLOCK) == {"softmax"}
    (tmp_path / "23_Softmax.py").write_text(RELU.replace("torch.relu(x)", "torch.softmax(x, dim=-1)"))
    assert Suite(tmp_path, n=12).same_ops(LIBRARY_BLOCK) == "23_Softmax.py"
    renamed = LIBRARY_BLOCK.replace("Scorer", "Ranker").replace("scaled", "tempered")
    assert model_ngrams(renamed, 12) == model_ngrams(LIBRARY_BLOCK, 12)
    assert duplicate_key(renamed) == duplicate_key(LIBRARY_BLOCK) and task_id(renamed) != task_id(LIBRARY_BLOCK)
    bigger = LIBRARY_BLOCK.replace("torch.randn(4, 8)", "torch.randn(64, 512)")
    assert computation_id(bigger) == computation_id(LIBRARY_BLOCK) != computation_id(renamed.replace("0.5", "2.0"))
    assert duplicate_key(bigger) != duplicate_key(LIBRARY_BLOCK)
