"""Splitting a shell command line into the simple commands a permission is asked for.

``ls && rm -rf build`` is two commands; a rule that allows ``ls *`` must not allow
the ``rm`` riding along. Operators (``;``, ``&&``, ``||``, ``|``, ``&``), newlines
and command substitutions (``$(…)``, backticks) all separate commands.
"""

from __future__ import annotations

import re
import shlex

_OPERATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;"})
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")


def _split_line(line: str) -> list[str]:
    # "<>" are punctuation too, so redirections like ">&2" and "2>&1" stay one token
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in _OPERATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return [" ".join(words) for words in commands if words]


def simple_commands(command: str) -> list[str]:
    """Each simple command in ``command``, in order (the whole line if it cannot be parsed)."""
    found: list[str] = []
    for inner in _SUBSTITUTION.findall(command):
        found += simple_commands(inner[0] or inner[1])
    outer = _SUBSTITUTION.sub(" ", command)
    try:
        for line in outer.splitlines():
            found += _split_line(line)
    except ValueError:  # unbalanced quotes: ask for the line as it is
        return [command.strip()]
    return [c for c in found if c] or [command.strip()]


def prefix_pattern(simple: str) -> str:
    """The "always" pattern for a command: its first word, any arguments."""
    return f"{simple.split()[0]} *"
