"""A differential suite for bash permissions: hostile lines run for real.

Each line is read by the permission check under one allow rule (``echo *``; everything
else, edits and leaving the project included, asks). A line that would run without an
ask is then run with bash in a scratch project, and any side effect (a file made,
changed or removed, inside the project or outside it) fails the test. The same lines
are also run unguarded in a copy of the scratch tree, to show they are hostile: most of
them do leave a trace when nothing stops them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from partwire.permission import evaluate, unchecked_rules
from partwire.schema.session import PermissionRule
from partwire.tools.shell_permission import ask_for_line

RULES = [
    PermissionRule(permission="*", pattern="*", action="ask"),
    PermissionRule(permission="bash", pattern="echo *", action="allow"),
]

PAYLOADS = ["touch pwned", "rm -f keep.txt", "mkdir ../outside/made"]

TEMPLATES = [
    # riders in lists, pipelines and lines
    "echo hi; {p}", "echo hi && {p}", "echo hi || {p}", "false || {p}", "echo hi | {p}",
    "echo hi & {p}", "echo hi\n{p}", "echo hi \\\n; {p}", "echo 'a' ; {p} # echo",
    # substitutions
    "echo $({p})", "echo `{p}`", 'echo "$({p})"', "echo `echo \\`{p}\\``",
    "echo $(echo $({p}))", "echo ${{X:-$({p})}}", "echo ${{X:=$({p})}}", "echo \"${{X#$({p})}}\"",
    # prompt expansion and indirection (X, Y hold hostile text in the environment)
    "echo ${{X@P}}", "echo \"${{X@P}}\"", "echo ${{!Y}}", "echo ${{Y@P}}", "echo ${{X@E}}",
    "Z='$({p})'; echo ${{Z@P}}", "Z='a[$({p})]'; echo ${{!Z}}",
    # arithmetic, [[ ]], declarations
    "echo hi && [[ 'a[$({p})]' -eq 0 ]]", "[[ 'a[$({p})]' -eq 0 ]] && echo hi",
    "typeset -i Z='a[$({p})]'", "declare -i Z='a[$({p})]'; echo $Z", "echo $((a[$({p})]))",
    "((a[$({p})])); echo", "let 'a[$({p})]'", "echo hi; local -i Z='a[$({p})]'",
    "printf -v 'a[$({p})]' x", "read -a 'a[$({p})]' <<< x", "unset 'a[$({p})]'; echo",
    "export Z=1; {p}", "readonly Z='a[$({p})]'",
    # environment prefixes and variables that change what runs
    "PATH=.:$PATH echo hi; {p}", "Z=$({p}) echo hi", "LD_PRELOAD=./x.so echo x; {p}",
    "BASH_ENV=./evil.sh bash -c 'echo'", "for PATH in .; do echo; done; {p}",
    # code runners and wrappers
    "eval '{p}'", "echo hi; eval '{p}'", "source ./evil.sh", ". ./evil.sh", "exec {p}",
    "command {p}", "builtin eval '{p}'", "env {p}", "echo pwned | xargs touch",
    "nohup {p}", "timeout 5 {p}", "nice {p}", "time {p}", "bash -c '{p}'", "sh -c '{p}'",
    "trap '{p}' EXIT; echo", "coproc {p}", "mapfile -t a < <({p})",
    # functions, groups, subshells, heredocs
    "f() {{ {p}; }}; f", "echo() {{ {p}; }}; echo hi", "function echo {{ {p}; }}; echo hi",
    "({p})", "{{ {p}; }}", "echo hi; ( {p} )", "cat <<EOF\n$({p})\nEOF",
    "echo <<EOF\n$({p})\nEOF", "echo <<< $({p})", "echo <({p})", "echo >({p})",
    "echo hi > >({p})",
    # quoting, escapes, brace expansion and globs in command position
    "$'\\x74ouch' pwned", "e'c'ho hi; {p}", "\\{p}", "{{touch,pwned}}", "/???/tou?h pwned",
    "/usr/bin/tou[c]h pwned", "$(echo touch) pwned", "${{T:-touch}} pwned", '"touch" pwned',
    "echo $'a\\nb'; {p}", "echo {{a,b}}; {p}", "ec\\\nho hi; {p}",
    # loops and conditionals
    "for i in 1; do {p}; done", "for ((i=0;i<1;i++)); do {p}; done", "while {p}; do break; done",
    "until echo; do {p}; done; {p}", "if {p}; then echo; fi", "if echo; then {p}; fi",
    "case x in x) {p};; esac", "case $({p}) in *) echo;; esac", "! {p}",
]  # fmt: skip

# Writes by redirection: in the project (an edit, which asks) and out of it.
WRITES = [
    "echo x > pwned", "echo x >> keep.txt", "echo x >| pwned", "echo x &> pwned",
    "echo x &>> pwned", "echo x >& pwned", "echo x 1<> keep.txt", "echo > pwned x",
    "echo x 2> pwned", "echo x > /dev/null > pwned", "echo x > ../outside/pwned",
    "echo x >> ../outside/keep.txt", "echo x > link/pwned", "echo x > link/../../outside/pwned",
    "echo x > {outside}/pwned", "echo x > ~/pwned", "echo x > $HOME/pwned", "echo x > pwn*",
    "echo x > $(echo pwned)", "echo x > 'pwned'", "echo x > \"pwned\"", "echo x > p\\wned",
    "echo x > {{pwned,b}}", "cd ../outside && echo x > pwned", "cd .. && echo x > keep.txt",
    "echo x | echo > pwned", "echo x; echo y > pwned", "echo $(echo x > pwned)",
    "echo x > /dev/null; echo y > pwned", "echo x 3> pwned", "echo x 3>&1 > pwned",
]  # fmt: skip

# Lines that must run without an ask, and change nothing.
BENIGN = [
    "echo hi", "echo hi; echo there", "echo hi && echo there || echo never", "echo hi | echo",
    "echo 'a; touch pwned'", 'echo "$(echo nested)"', "echo $HOME ${HOME}", "echo *.txt",
    "echo {a,b}", "echo $'tab\\there'", "echo x > /dev/null", "echo x 2>&1", "echo x >&2",
    "for i in a b; do echo $i; done", "if echo a; then echo b; else echo c; fi",
    "case a in a) echo a;; esac", "echo a\\\nb", "! echo negated", "echo x 2>/dev/null",
]  # fmt: skip


def _lines() -> list[str]:
    hostile = [t.format(p=p) for t in TEMPLATES for p in PAYLOADS]
    return list(dict.fromkeys(hostile + WRITES))


class Asked(Exception):
    pass


def _asker(rules: Sequence[PermissionRule]) -> Any:
    async def ask(
        permission: str,
        patterns: Sequence[str],
        *,
        always: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        must_ask: bool = False,
    ) -> None:
        # as Permissions.ask reads them: an opaque line is covered only by a rule for "*"
        applied = unchecked_rules(rules) if must_ask else rules
        actions = {evaluate(permission, p, applied) for p in patterns}
        if actions != {"allow"}:
            raise Asked(f"{permission} {list(patterns)}")

    return ask


def _scratch(root: Path) -> Path:
    """A project beside a folder outside it, a symlink from one to the other, a file to
    delete in each, and a script a line could source."""
    project, outside, home = root / "project", root / "outside", root / "home"
    for folder in (project, outside, home):
        folder.mkdir(parents=True)
    (project / "keep.txt").write_text("keep\n")
    (outside / "keep.txt").write_text("keep\n")
    (project / "evil.sh").write_text("touch pwned\n")
    (project / "link").symlink_to(outside, target_is_directory=True)
    return project


def _state(root: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or path.is_dir():
            found[str(path.relative_to(root))] = (0, 0)
        else:
            stat = path.stat()
            found[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns)
    return found


def _run(line: str, project: Path) -> None:
    root = project.parent
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "X": "$(touch pwned)",
        "Y": "a[$(touch pwned)]",
        "LC_ALL": "C",
    }
    subprocess.run(
        ["/bin/bash", "-c", line.replace("{outside}", str(root / "outside"))],
        cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=10,
    )  # fmt: skip


def _side_effect(line: str, root: Path) -> bool:
    project = _scratch(root)
    before = _state(root)
    _run(line, project)
    return _state(root) != before


async def _guarded(line: str, project: Path) -> bool:
    """Whether the permission check lets ``line`` run with no ask."""
    try:
        await ask_for_line(
            _asker(RULES),
            line.replace("{outside}", str(project.parent / "outside")),
            cwd=project,
            project_dir=project,
        )
    except Asked:
        return False
    return True


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
async def test_no_hostile_line_has_a_side_effect_without_an_ask(tmp_path: Path) -> None:
    lines = _lines()
    assert len(lines) >= 200
    slipped: list[str] = []
    hostile = 0
    for number, line in enumerate(lines):
        unguarded = tmp_path / f"free{number}"
        hostile += _side_effect(line, unguarded)
        guarded = tmp_path / f"kept{number}"
        project = _scratch(guarded)
        if await _guarded(line, project):
            before = _state(guarded)
            _run(line, project)
            if _state(guarded) != before:
                slipped.append(line)
    assert slipped == []
    # the suite is hostile: run with nothing in the way, most lines leave a trace
    assert hostile >= 0.8 * len(lines), hostile


async def test_harmless_lines_run_without_an_ask_and_change_nothing(tmp_path: Path) -> None:
    for number, line in enumerate(BENIGN):
        root = tmp_path / str(number)
        project = _scratch(root)
        assert await _guarded(line, project), line
        assert not _side_effect(line, tmp_path / f"run{number}"), line


async def test_a_redirect_out_of_the_project_asks_external_directory(tmp_path: Path) -> None:
    project = _scratch(tmp_path)
    asked: list[tuple[str, list[str]]] = []

    async def ask(permission: str, patterns: Sequence[str], **_: Any) -> None:
        asked.append((permission, list(patterns)))

    await ask_for_line(ask, "echo x > link/f; echo y >> out.txt", cwd=project, project_dir=project)
    outside = (tmp_path / "outside").resolve()
    assert asked == [
        ("bash", ["echo x", "echo y"]),
        ("external_directory", [f"{outside}/*"]),
        ("edit", ["out.txt"]),
    ]


async def test_an_opaque_line_is_covered_only_by_a_rule_for_everything(tmp_path: Path) -> None:
    """The build agent allows every command (``*``): an opaque line runs as any other.
    A narrower allow never covers one."""
    project = _scratch(tmp_path)
    line = "X=1 echo hi"
    everything = [PermissionRule(permission="*", pattern="*", action="allow")]
    narrow = [*RULES, PermissionRule(permission="bash", pattern="X=1 *", action="allow")]
    await ask_for_line(_asker(everything), line, cwd=project, project_dir=project)
    with pytest.raises(Asked):
        await ask_for_line(_asker(narrow), line, cwd=project, project_dir=project)
    denied = [*everything, PermissionRule(permission="bash", pattern="rm *", action="deny")]
    assert evaluate("bash", "rm -rf x", unchecked_rules(denied)) == "deny"
