"""A file mentioned in a prompt (a file:// part) reaches the model as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from partwire.errors import BadRequestError
from partwire.providers.stream import UserTurn
from partwire.runtime import Runtime
from partwire.schema.input import FilePartInput, PromptInput, TextPartInput
from partwire.schema.part import FilePart, TextPart
from tests.scripted import ScriptedModel, text_reply
from tests.session.helpers import SCRIPTED, new_session


def _mention(url: str, name: str) -> PromptInput:
    return PromptInput(
        parts=[
            TextPartInput(text=f"explain @{name}"),
            FilePartInput(mime="text/plain", url=url, filename=name),
        ],
        model=SCRIPTED,
    )


async def test_a_mentioned_file_is_read_into_a_synthetic_part(
    runtime: Runtime, model: ScriptedModel, project: Path
) -> None:
    model.enqueue(text_reply("ok"))
    sid = await new_session(runtime)
    await runtime.loop.prompt(sid, _mention(f"file://{project / 'src' / 'app.py'}", "src/app.py"))
    user = (await runtime.store.list_messages(sid))[0]
    files = [p for p in user.parts if isinstance(p, FilePart)]
    synthetic = [p for p in user.parts if isinstance(p, TextPart) and p.synthetic]
    assert [f.filename for f in files] == ["src/app.py"]
    assert len(synthetic) == 1
    assert "Called the Read tool" in synthetic[0].text
    assert "00001| line 1" in synthetic[0].text and "00050| line 50" in synthetic[0].text
    turn = model.requests[0].messages[-1]
    assert isinstance(turn, UserTurn)
    assert "00050| line 50" in turn.text
    assert turn.files == ()  # the file:// URL itself never goes to a provider


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("file:///etc/passwd", "outside the project"),
        ("file://{project}/../secret.txt", "outside the project"),
        ("file://{project}/missing.txt", "cannot read the mentioned file missing.txt"),
    ],
)
async def test_a_bad_mention_is_refused_and_stores_nothing(
    runtime: Runtime, model: ScriptedModel, project: Path, url: str, problem: str
) -> None:
    sid = await new_session(runtime)
    with pytest.raises(BadRequestError, match=problem):
        await runtime.loop.prompt(sid, _mention(url.format(project=project), "x"))
    assert await runtime.store.list_messages(sid) == []
    assert model.requests == []
