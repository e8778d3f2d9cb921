"""The fast lane (``-m "not slow"``) and the slow one: every test put in the slow lane says why (issue 36), and
every test module keeps tests in the fast lane (README's Development section)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SLOW = re.compile(r"pytest\.mark\.slow\b(?!\(reason=)")
# modules with no test in the fast lane, and why
ALL_SLOW = {
    "tests/remote/test_model_load.py": "both of its tests start a real server process whose model load is delayed 3 s",
}


def test_every_slow_mark_gives_its_reason():
    bare = []
    for path in sorted(TESTS.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if path.name != Path(__file__).name and SLOW.search(code) and "#" not in line:
                bare.append(f"{path.relative_to(TESTS.parent)}:{n}")
    assert not bare, f'write pytest.mark.slow(reason="...") (or a comment on the line): {bare}'


def _is_slow(node: ast.expr) -> bool:
    """``pytest.mark.slow`` or ``pytest.mark.slow(reason=...)``."""
    node = node.func if isinstance(node, ast.Call) else node
    return isinstance(node, ast.Attribute) and node.attr == "slow"


def test_every_test_module_keeps_a_fast_test():
    """README: the fast lane leaves out the heavy tests, and every test module keeps tests in it but those of
    :data:`ALL_SLOW` and the GPU samplers' module (opt-in with -m gpu)."""
    all_slow = []
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_slow = any(
            isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
            and any(_is_slow(e) for e in ast.walk(n.value) if isinstance(e, ast.expr))
            for n in tree.body
        )
        tests = [
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test_")
        ]
        fast = [t for t in tests if not any(_is_slow(d) for d in t.decorator_list)]
        if tests and (module_slow or not fast) and "gpu" not in path.relative_to(TESTS).parts:
            all_slow.append(str(path.relative_to(TESTS.parent)))
    assert sorted(all_slow) == sorted(ALL_SLOW), f"modules with no test in the fast lane: {all_slow}"
