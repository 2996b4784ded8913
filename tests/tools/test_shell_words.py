"""Splitting command lines for bash permissions; an allowed prefix never covers a rider."""

from __future__ import annotations

import pytest

from partwire.permission import evaluate, wildcard
from partwire.schema.session import PermissionRule
from partwire.tools.shell_words import prefix_pattern, simple_commands


@pytest.mark.parametrize(
    ("line", "commands"),
    [
        ("ls -la", ["ls -la"]),
        ("ls && rm -rf build", ["ls", "rm -rf build"]),
        ("git status | head -5; echo done", ["git status", "head -5", "echo done"]),
        ("make test || true & sleep 1", ["make test", "true", "sleep 1"]),
        ("echo 'a && b'", ["echo a && b"]),
        ("echo $(rm -rf x) `whoami`", ["rm -rf x", "whoami", "echo"]),
        ("cd src\npytest -q", ["cd src", "pytest -q"]),
        ("echo 'unbalanced", ["echo 'unbalanced"]),
        ("make 2>&1 | tee log", ["make 2 >& 1", "tee log"]),
        ("echo err >&2 && ls > out.txt", ["echo err >& 2", "ls > out.txt"]),
    ],
)
def test_simple_commands(line: str, commands: list[str]) -> None:
    assert simple_commands(line) == commands


def test_an_always_rule_for_a_prefix_does_not_allow_what_rides_along() -> None:
    rules = [
        PermissionRule(permission="bash", pattern="*", action="ask"),
        PermissionRule(permission="bash", pattern=prefix_pattern("ls -la"), action="allow"),
    ]
    actions = [evaluate("bash", c, rules) for c in simple_commands("ls; rm -rf ~")]
    assert actions == ["allow", "ask"]
    assert wildcard("ls *", "ls") and wildcard("ls *", "ls -la") and not wildcard("ls *", "lsof")
