"""Dependencies point one way (DESIGN §11): nothing lower imports anything higher."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "partwire"

# lower number = lower layer; a module may import its own layer or lower ones.
LAYERS = {
    "ids": 0, "errors": 0, "config": 0,
    "schema": 1,
    "bus": 2, "storage": 2, "providers": 2, "tools": 2, "permission": 2, "question": 2,
    "workspace": 2,
    "session": 3,
    "runtime": 4,
    "server": 5, "protocol": 5, "client": 5, "cli": 6,
}  # fmt: skip


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "partwire" or len(parts) < 2:
        return None
    return LAYERS.get(parts[1])


def test_no_module_imports_a_higher_layer() -> None:
    problems = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        own = _layer(".".join(relative.parts))
        if own is None:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                target = _layer(node.module)
                if target is not None and target > own:
                    problems.append(f"{relative} imports {node.module}")
    assert problems == []
