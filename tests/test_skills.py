"""Skills: SKILL.md discovery, the skill tool, the system prompt's list and GET /skill."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from partwire import skills
from partwire.runtime import Runtime
from partwire.schema.part import ToolPart
from partwire.schema.tool_state import ToolStateCompleted
from partwire.skills import Shelf, Skill, discover
from tests import scripted
from tests.reference import response_schema, validate_schema
from tests.session.helpers import new_session, prompt_body


def write_skill(root: Path, folder: str, name: str, description: str, body: str) -> Path:
    path = root / folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
    return path


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    return tmp_path / "config"


def test_discovery_reads_every_place_and_the_project_wins(project: Path, user_dir: Path) -> None:
    write_skill(user_dir, "skills", "release", "Cut a release (user)", "user steps")
    write_skill(user_dir, "skills", "notes", "Write notes", "note steps")
    write_skill(project, ".partwire/skills", "release", "Cut a release (project)", "steps")
    write_skill(project, ".opencode/skill", "lint", "Lint the code", "lint steps")
    write_skill(project, ".claude/skills", "review", "Review a change", "review steps")
    broken = project / ".partwire/skills/broken/SKILL.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("---\nname: [unclosed\n---\nx\n")
    nameless = project / ".partwire/skills/plain/SKILL.md"
    nameless.parent.mkdir(parents=True)
    nameless.write_text("---\ndescription: Named by its folder\n---\nplain steps\n")
    undescribed = project / ".partwire/skills/vague/SKILL.md"
    undescribed.parent.mkdir(parents=True)
    undescribed.write_text("---\nname: vague\n---\nno description\n")

    skills = {s.name: s for s in discover(project, user_dir)}
    assert sorted(skills) == ["lint", "notes", "plain", "release", "review"]
    assert skills["release"].description == "Cut a release (project)"
    assert skills["release"].content == "steps"
    assert skills["plain"].content == "plain steps"


async def test_the_shelf_reads_the_disk_at_most_once_a_second_and_shares_a_read(
    project: Path, user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[Path] = []

    def counted(project_dir: Path, user_config_dir: Path) -> list[Skill]:
        reads.append(project_dir)
        return discover(project_dir, user_config_dir)

    monkeypatch.setattr(skills, "discover", counted)
    write_skill(project, ".partwire/skills", "lint", "Lint the code", "lint steps")
    shelf = Shelf()
    together = await asyncio.gather(*(shelf.skills(project, user_dir) for _ in range(5)))
    assert [[s.name for s in found] for found in together] == [["lint"]] * 5
    assert len(reads) == 1  # five steps asking at once: one read
    write_skill(project, ".partwire/skills", "review", "Review a change", "review steps")
    assert [s.name for s in await shelf.skills(project, user_dir)] == ["lint"]  # fresh
    assert len(reads) == 1
    shelf.fresh_s = 0.0  # the second has passed: the disk is read again
    assert [s.name for s in await shelf.skills(project, user_dir)] == ["lint", "review"]
    assert len(reads) == 2
    elsewhere = project / "elsewhere"
    assert await Shelf().skills(elsewhere, user_dir) == []


async def test_the_model_sees_the_skills_and_loads_one(
    runtime: Runtime, project: Path, model: scripted.ScriptedModel
) -> None:
    path = write_skill(project, ".partwire/skills", "deploy", "Deploy the app", "Run make ship.")
    model.enqueue(scripted.tool_reply("skill", {"name": "deploy"}), scripted.text_reply("ok"))
    session_id = await new_session(runtime)
    await runtime.loop.prompt(session_id, prompt_body("deploy it"))
    assert "- deploy: Deploy the app" in model.requests[0].system
    tool = next(
        p
        for m in await runtime.store.list_messages(session_id)
        for p in m.parts
        if isinstance(p, ToolPart)
    )
    assert isinstance(tool.state, ToolStateCompleted)
    assert "Run make ship." in tool.state.output and str(path.parent) in tool.state.output

    model.enqueue(scripted.tool_reply("skill", {"name": "nope"}), scripted.text_reply("ok"))
    await runtime.loop.prompt(session_id, prompt_body("again"))
    failed = [
        p
        for m in await runtime.store.list_messages(session_id)
        for p in m.parts
        if isinstance(p, ToolPart)
    ][-1]
    assert failed.state.status == "error" and "Available: deploy" in failed.state.error


async def test_no_skills_no_list(runtime: Runtime, model: scripted.ScriptedModel) -> None:
    model.enqueue(scripted.text_reply("hi"))
    await runtime.loop.prompt(await new_session(runtime), prompt_body("hello"))
    assert "skill tool" not in model.requests[0].system


async def test_the_skill_route_answers_opencodes_shape(server: str, project: Path) -> None:
    write_skill(project, ".partwire/skills", "deploy", "Deploy the app", "Run make ship.")
    async with httpx.AsyncClient(base_url=server) as http:
        listed = (await http.get("/skill")).json()
    validate_schema(response_schema("/skill", "get"), listed)
    assert [s["name"] for s in listed] == ["deploy"] and listed[0]["content"] == "Run make ship."
