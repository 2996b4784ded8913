"""What a shell command line runs and writes, read with a real bash grammar (tree-sitter-bash).

``ls && rm -rf build`` is two commands; a rule that allows ``ls *`` must not allow the
``rm`` riding along. Every simple command is found wherever it sits: in lists,
pipelines, loops, and inside ``$(…)`` substitutions, and is matched by its words alone
(its redirections are not part of the text a rule sees). A redirection to a file is a
write of its own: the caller asks ``edit`` for it, or ``external_directory`` when it
lands outside the project.

Fail closed: the line is read with a list of the nodes known to be safe, and anything
else makes it *opaque*: it is asked for every time and no allow rule matches it. Opaque
are a line the grammar cannot parse; anything that assigns a variable (an environment
prefix, ``export``, ``declare``, ``unset``, a bare assignment), since a variable can
change what later words run (``PATH``, ``LD_PRELOAD``, ``${X@P}``); ``[[ ]]`` and
arithmetic, which evaluate ``a[$(…)]`` subscripts; parameter expansions with operators
or indirection; backticks; a command name that is not a plain word (quotes, globs,
expansions); builtins that run or load code (``eval``, ``source``, ``exec``,
``command``, ``let``, …); process substitutions, subshells, brace groups, heredocs,
here-strings and function definitions; a redirection whose target is not a plain word;
a write after ``cd``; and a line longer than :data:`MAX_COMMAND_CHARS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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
    "variable_assignment": "a variable assignment",
    "declaration_command": "a declaration (export, declare, local, readonly, typeset)",
    "unset_command": "unset",
    "test_command": "a test expression ([ ] or [[ ]])",
    "c_style_for_statement": "arithmetic",
    "compound_assignment": "an array assignment",
}

# Statements whose children are statements or arguments, and nothing of their own runs.
_STRUCTURE = frozenset(
    {"program", "list", "pipeline", "redirected_statement", "negated_command", "if_statement",
     "elif_clause", "else_clause", "while_statement", "for_statement", "do_group",
     "case_statement", "case_item", "comment"}
)  # fmt: skip
_LITERALS = frozenset(
    {"word", "number", "raw_string", "ansi_c_string", "string_content", "variable_name",
     "special_variable_name"}
)  # fmt: skip
# Builtins and wrappers that run, load or define code, or set variables, from their words:
# a rule for their first word would cover whatever they are given.
_RUNS_CODE = frozenset(
    {"eval", "source", ".", "exec", "command", "builtin", "let", "declare", "typeset",
     "local", "export", "readonly", "unset", "read", "readarray", "mapfile",
     "alias", "trap", "enable", "set", "shopt", "coproc", "env", "xargs", "sudo", "doas",
     "nohup", "nice", "timeout", "time", "bash", "sh", "dash", "zsh", "ksh", "fc", "hash",
     "caller", "compgen", "complete", "wait", "getopts", "bind"}
)  # fmt: skip
# A command name as written: no quotes, escapes, expansions, globs or braces.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_./+:@%,=-]+|~?/[A-Za-z0-9_./+:@%,=-]*")
# A redirection target read as a path: no expansion, glob, quote, escape or tilde.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_./+:@%,=-]+")
_WRITES = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&"})
_FD_TARGET = re.compile(r"[0-9]+-?|-")
_CHANGES_DIR = frozenset({"cd", "pushd", "popd"})
# Writes that go nowhere a file could be harmed.
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


@dataclass(frozen=True)
class ShellCommand:
    commands: list[str]  # each simple command, in order, its words only
    opaque: str | None  # why no allow rule may match, or None
    writes: list[str] = field(default_factory=list)  # files redirections write, as written


@dataclass
class _Reading:
    commands: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    changes_dir: bool = False

    def opaque(self, node: Node) -> None:
        if node.type == "ERROR":
            return  # said once, as "it cannot be parsed"
        self.reasons.append(_OPAQUE.get(node.type) or f"a {node.type.replace('_', ' ')}")


@cache
def _parser() -> Parser:
    # loaded on the first command read, not with the server (a megabyte it may never use)
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _text(node: Node) -> str:
    return (node.text or b"").decode(errors="replace")


def _statement(node: Node, reading: _Reading) -> None:
    if not node.is_named:
        return
    if node.type == "command":
        _command(node, reading)
    elif node.type == "file_redirect":
        _redirect(node, reading)
    elif node.type == "for_statement":
        _for(node, reading)
    elif node.type == "case_statement":
        for child in node.named_children:
            (_statement if child.type == "case_item" else _argument)(child, reading)
    elif node.type == "case_item":
        for child in node.named_children:
            (_statement if child.type not in _LITERALS else _argument)(child, reading)
    elif node.type in _STRUCTURE:
        for child in node.children:
            _statement(child, reading)
    else:
        reading.opaque(node)


def _for(node: Node, reading: _Reading) -> None:
    # a loop variable is an assignment: only names no program reads (lower case)
    name = node.child_by_field_name("variable")
    if name is None or not re.fullmatch(r"[a-z_][a-z0-9_]*", _text(name)):
        reading.reasons.append("a loop variable that could be an environment variable")
    for child in node.named_children:
        if child.type == "do_group":
            _statement(child, reading)
        elif child != name:
            _argument(child, reading)


def _command(node: Node, reading: _Reading) -> None:
    words: list[str] = []
    slot = len(reading.commands)  # a command comes before those its substitutions run
    reading.commands.append("")
    for child in node.named_children:
        if child.type == "command_name":
            name = _text(child)
            if not _PLAIN_NAME.fullmatch(name):
                reading.reasons.append(f"a command name that is not a plain word ({name[:40]})")
            elif name in _RUNS_CODE:
                reading.reasons.append(f"{name}, which runs or sets what its words say")
            reading.changes_dir |= name in _CHANGES_DIR
            words.append(name)
        elif child.type == "file_redirect":
            _redirect(child, reading)
        elif child.type == "variable_assignment":
            reading.reasons.append("an environment prefix")
        else:
            _argument(child, reading)
            words.append(_text(child))
    if words[:1] == ["printf"] and any(word.startswith("-v") for word in words):
        reading.reasons.append("printf -v, which sets a variable")
    reading.commands[slot] = " ".join(words)


def _argument(node: Node, reading: _Reading) -> None:
    if node.type in _LITERALS:
        if node.type not in ("raw_string", "ansi_c_string") and "`" in _text(node):
            reading.reasons.append("a backtick")
    elif node.type == "simple_expansion":
        pass  # $NAME: a value, never run
    elif node.type == "expansion":
        kinds = [child.type for child in node.children]
        if kinds != ["${", "variable_name", "}"]:
            reading.reasons.append("a parameter expansion with an operator")
    elif node.type in ("string", "concatenation"):
        for child in node.named_children:
            _argument(child, reading)
    elif node.type == "command_substitution":
        if node.children and node.children[0].type == "`":
            reading.reasons.append("a backtick substitution")
        for child in node.children:
            _statement(child, reading)
    else:
        reading.opaque(node)


def _redirect(node: Node, reading: _Reading) -> None:
    operator = next((c.type for c in node.children if not c.is_named), "")
    targets = [c for c in node.named_children if c.type != "file_descriptor"]
    if len(targets) != 1:
        reading.reasons.append("a redirection followed by more words")
        return
    target = _text(targets[0])
    if operator in (">&", "<&") and _FD_TARGET.fullmatch(target):
        return  # a copy of a file descriptor, not a file
    if targets[0].type not in ("word", "number") or not _PLAIN_PATH.fullmatch(target):
        reading.reasons.append(f"a redirection to a target that is not a plain path: {target[:40]}")
    elif (operator in _WRITES or operator.endswith(">")) and target not in HARMLESS_TARGETS:
        reading.writes.append(target)


def analyze(command: str) -> ShellCommand:
    """The simple commands in ``command``, the files it writes and, if it is opaque, why."""
    line = command.strip()
    if len(line) > MAX_COMMAND_CHARS:
        return ShellCommand([line[:200] + " …"], f"longer than {MAX_COMMAND_CHARS} characters")
    tree = _parser().parse(line.encode())
    reading = _Reading()
    _statement(tree.root_node, reading)
    if tree.root_node.has_error:
        reading.reasons.insert(0, "it cannot be parsed")
    if reading.changes_dir and reading.writes:
        reading.reasons.append("a redirection after a change of directory")
    commands = [c for c in reading.commands if c] or [line]
    return ShellCommand(commands, ", ".join(dict.fromkeys(reading.reasons)) or None, reading.writes)


def simple_commands(command: str) -> list[str]:
    """Each simple command in ``command``, in order (the whole line if it has none)."""
    return analyze(command).commands


def prefix_pattern(simple: str) -> str:
    """The "always" pattern for a command: its first word, any arguments."""
    return f"{simple.split()[0]} *"
