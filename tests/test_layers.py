"""Dependencies point one way (DESIGN §11): nothing lower imports anything higher, every
module has a layer, and no import goes round in a circle (type-only imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "partwire"

# lower number = lower layer; a module may import its own layer or lower ones.
LAYERS = {
    "version": 0, "clock": 0, "ids": 0, "errors": 0, "words": 0, "private": 0,
    "frontmatter": 0, "processes": 0,
    "logs": 0, "keys": 0, "config_providers": 0, "config": 0,
    "schema": 1, "builder": 1, "builder_inputs": 1, "access": 1,
    "bus": 2, "storage": 2, "providers": 2, "tools": 2, "permission": 2, "question": 2,
    "workspace": 2, "file_index": 2, "skills": 2, "commands": 2, "editor": 2, "quotas": 2,
    "terminals": 2, "tuicontrol": 2, "config_watch": 2, "metrics": 2, "tracing": 2,
    "accounts": 2, "presence": 2,
    "session": 3, "worktrees": 3,
    "runtime": 4, "replays": 4,
    "server": 5, "protocol": 5, "client": 5,
    "cli": 6, "__main__": 6,
    "__init__": 7,  # the package root re-exports the public names: nothing imports it
}  # fmt: skip


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1]) if parts[0] == "partwire" and len(parts) > 1 else None


def _target(name: str) -> str:
    """The module an import names: ``partwire.x.y`` as a module or package."""
    for candidate in (name, f"{name}.__init__"):
        if candidate in MODULES:
            return candidate
    return name


def _imports(path: Path) -> list[str]:
    """Every partwire module ``path`` imports, in functions and under TYPE_CHECKING too;
    ``from partwire import x`` names the module ``partwire.x`` (or the root, for a name
    that is not a module)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("partwire"):
                continue
            for alias in node.names:
                submodule = _target(f"{node.module}.{alias.name}")
                found.append(submodule if submodule in MODULES else _target(node.module))
        elif isinstance(node, ast.Import):
            found += [_target(a.name) for a in node.names if a.name.startswith("partwire")]
    return found


def test_every_module_has_a_layer() -> None:
    missing = sorted(m for m in MODULES if _layer(m) is None)
    assert missing == [], "give these a layer in LAYERS"


def test_no_module_imports_a_higher_layer() -> None:
    problems = []
    for module, path in MODULES.items():
        own = _layer(module)
        assert own is not None
        for imported in _imports(path):
            target = _layer(imported)
            if target is not None and target > own:
                problems.append(f"{module} imports {imported}")
    assert problems == []


def test_no_import_goes_round_in_a_circle() -> None:
    graph = {m: {t for t in _imports(p) if t in MODULES and t != m} for m, p in MODULES.items()}
    circles = []
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def walk(module: str) -> None:
        state[module] = 1
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == 1:
                circles.append(" → ".join([*path[path.index(imported) :], imported]))
            elif imported not in state:
                walk(imported)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module)
    assert circles == []
