"""What a shell command line runs, read with a real bash grammar (tree-sitter-bash).

``ls && rm -rf build`` is two commands; a rule that allows ``ls *`` must not allow the
``rm`` riding along. Every simple command is found wherever it sits: in lists,
pipelines, loops, and inside command substitutions. Fail closed: a line the grammar
cannot parse, or one that runs code the simple-command view cannot show whole (a
process substitution, a subshell, a brace group, a heredoc, a function definition,
arithmetic), or one longer than :data:`MAX_COMMAND_CHARS`, is *opaque*: it is asked
for every time and no allow rule matches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# Longer lines are not parsed for permissions at all: they are always asked for.
MAX_COMMAND_CHARS = 10_000

_OPAQUE = {
    "process_substitution": "a process substitution",
    "subshell": "a subshell",
    "compound_statement": "a brace group",
    "heredoc_redirect": "a heredoc",
    "function_definition": "a function definition",
    "arithmetic_expansion": "arithmetic expansion",
    "herestring_redirect": "a here-string",
}


@dataclass(frozen=True)
class ShellCommand:
    commands: list[str]  # each simple command, in order, as written
    opaque: str | None  # why no allow rule may match, or None


@cache
def _parser() -> Parser:
    # loaded on the first command read, not with the server (a megabyte it may never use)
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _walk(node: Node, commands: list[str], reasons: list[str]) -> None:
    if node.type in _OPAQUE:
        reasons.append(_OPAQUE[node.type])
    if node.type == "command":
        # a command's redirections belong to it: "echo x > f" is asked for whole
        whole = node.parent if node.parent and node.parent.type == "redirected_statement" else node
        commands.append((whole.text or b"").decode(errors="replace").strip())
    for child in node.children:
        _walk(child, commands, reasons)


def analyze(command: str) -> ShellCommand:
    """The simple commands in ``command`` and, if it is opaque, why."""
    line = command.strip()
    if len(line) > MAX_COMMAND_CHARS:
        return ShellCommand([line[:200] + " …"], f"longer than {MAX_COMMAND_CHARS} characters")
    tree = _parser().parse(line.encode())
    commands: list[str] = []
    reasons: list[str] = []
    _walk(tree.root_node, commands, reasons)
    if tree.root_node.has_error:
        reasons.insert(0, "it cannot be parsed")
    return ShellCommand(commands or [line], ", ".join(dict.fromkeys(reasons)) or None)


def simple_commands(command: str) -> list[str]:
    """Each simple command in ``command``, in order (the whole line if it has none)."""
    return analyze(command).commands


def prefix_pattern(simple: str) -> str:
    """The "always" pattern for a command: its first word, any arguments."""
    return f"{simple.split()[0]} *"
