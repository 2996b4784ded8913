"""The Python client covers the whole API with typed results (against a real server)."""

from __future__ import annotations

import pytest

from partwire.client.http import PartwireClient
from partwire.errors import NotFoundError, PartwireError
from partwire.schema.part import TextPart


async def test_the_client_reaches_every_route(client: PartwireClient) -> None:
    assert (await client.health())["healthy"] is True
    session = await client.create_session()
    answer = await client.prompt(session.id, "README.md")
    assert answer.info.role == "assistant"
    renamed = await client.update_session(session.id, title="renamed")
    assert renamed.title == "renamed"
    assert [s.id for s in await client.find_sessions(search="renam", roots=True)] == [session.id]
    child = await client.create_session()
    assert await client.children(session.id) == []
    assert await client.todos(session.id) == []
    assert await client.diff(session.id) == []
    page = await client.page(session.id, limit=2)  # the newest two: the tool step, its summary
    assert [m.info.role for m in page] == ["assistant", "assistant"]
    earlier = await client.page(session.id, limit=5, before=page[0].info.id)
    assert [m.info.role for m in earlier] == ["user"]
    user_message = (await client.messages(session.id))[0]
    text = next(p for p in user_message.parts if isinstance(p, TextPart))
    edited = await client.update_part(text.model_copy(update={"text": "edited"}))
    assert isinstance(edited, TextPart) and edited.text == "edited"
    fork = await client.fork(session.id)
    assert len(await client.messages(fork.id)) == len(await client.messages(session.id))
    reverted = await client.revert(session.id, answer.info.id)
    assert reverted.revert is not None
    assert (await client.unrevert(session.id)).revert is None
    shell = await client.shell(session.id, "echo from-the-client")
    assert "from-the-client" in shell.parts[0].state.output  # type: ignore[union-attr]
    assert await client.summarize(session.id, "demo/demo") is True
    with pytest.raises(NotFoundError):
        await client.command(session.id, "deploy")
    assert await client.delete_part(session.id, user_message.info.id, text.id) is True
    assert await client.delete_message(session.id, user_message.info.id) is True
    assert await client.delete_session(child.id) is True

    assert [a.name for a in await client.agents()] == ["build", "plan", "general"]
    assert await client.commands() == []
    assert (await client.path())["directory"] == (await client.current_project())["worktree"]
    assert len(await client.projects()) == 1
    assert "README.md" in [f["name"] for f in await client.files()]
    assert (await client.file_content("README.md"))["content"].startswith("# Sample")
    assert await client.file_status() == []
    assert (await client.find_text("sample"))[0]["path"]["text"] == "README.md"
    assert await client.find_files("readme") == ["README.md"]
    assert await client.vcs() == {}
    assert await client.lsp() == [] and await client.formatters() == [] and await client.mcp() == {}
    assert await client.config() == {}
    assert [p.id for p in (await client.providers()).all] == ["demo"]
    assert (await client.config_providers()).default == {"demo": "demo"}
    assert await client.dispose() is True
    with pytest.raises(PartwireError):
        await client.update_config({"provider": {"x": {"api": "nope"}}})
