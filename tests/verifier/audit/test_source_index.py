"""The source index's one-pass walk and the data-flow solver's ordering of names."""

from __future__ import annotations

import ast

from tests.verifier.audit.helpers import HEADER, audit
from verifier.audit.dataflow import KernelFlow, strongly_connected
from verifier.audit.source_index import SourceIndex, walk

KERNEL = """
@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = tl.load(x_ptr + offs) * CHAIN
    tl.store(out_ptr + offs, y)
"""


def _index(source: str) -> SourceIndex:
    return SourceIndex(ast.parse(source), source)


def test_subtree_is_the_walk_of_every_node():
    source = HEADER + KERNEL.replace("CHAIN", "2.0") + "\nif x:\n    for a, *b in y:\n        f(lambda q: q[1:2])\n"
    index = _index(source)
    assert index.nodes == walk(index.tree)
    for node in index.nodes:
        assert index.subtree(node) == walk(node), ast.dump(node)


def test_a_chain_deeper_than_the_recursion_limit_is_still_audited():
    chain = " + ".join(["1.0"] * 1500)
    deep = _index(HEADER + KERNEL.replace("CHAIN", f"({chain})"))
    assert deep.nodes == walk(deep.tree)
    assert len(deep.subtree(deep.kernels["scale"].node)) > 4500
    shallow = [f.rule for f in audit(KERNEL.replace("CHAIN", "2.0"))]
    assert shallow == ["TRI201", "TRI201"]
    assert [f.rule for f in audit(KERNEL.replace("CHAIN", f"({chain})"))] == shallow


def test_groups_come_after_the_groups_they_depend_on():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"b", "d"}, "d": set(), "e": {"e", "a"}}
    groups = [sorted(group) for group in strongly_connected(graph)]
    assert groups == [["d"], ["b", "c"], ["a"], ["e"]]


def test_loop_carried_names_reach_their_fixed_point():
    source = HEADER + (
        "@triton.jit\n"
        "def walk_rows(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    ptrs = x_ptr + tl.arange(0, BLOCK)\n"
        "    acc = tl.zeros((BLOCK,), tl.float32)\n"
        "    for i in range(n):\n"
        "        acc = acc + step\n"
        "        step = tl.load(ptrs)\n"
        "        ptrs = ptrs + tl.program_id(0)\n"
    )
    index = _index(source)
    flow = KernelFlow(index, index.kernels["walk_rows"])
    ptrs, acc = ast.Name("ptrs", ast.Load()), ast.Name("acc", ast.Load())
    assert flow.tags(ptrs) == {"arange", "pid", "param:x_ptr", "param:BLOCK", "ax:-1"}
    assert flow.tags(acc) == {"load", "param:x_ptr", "param:BLOCK", "ax:-1"}
