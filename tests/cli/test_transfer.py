"""`partwire export` and `partwire import`: a session to a file and back, losing nothing."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from partwire.config import Settings
from tests.cli.test_cli import _run
from tests.cli.test_continuity import _session_id, _sessions


async def _made_session(settings: Settings) -> str:
    code, _, err = await _run(settings, "run", "--yes", "--title", "Moving", "bash", "echo moved")
    assert code == 0, err
    return _session_id(err)


async def test_export_then_import_elsewhere_keeps_every_message(
    settings: Settings, tmp_path: Path
) -> None:
    session_id = await _made_session(settings)
    code, out, err = await _run(settings, "export", session_id)
    assert code == 0, err
    exported = json.loads(out)
    assert exported["info"]["id"] == session_id and exported["info"]["title"] == "Moving"
    roles = [m["info"]["role"] for m in exported["messages"]]
    assert roles == ["user", "assistant", "assistant"]
    path = tmp_path / "moving.json"
    path.write_text(out)

    elsewhere = dataclasses.replace(settings, data_dir=tmp_path / "other-data")
    code, out, err = await _run(elsewhere, "import", str(path))
    assert code == 0, err
    assert out.strip() == session_id, "a new home keeps the session's ids"
    assert "imported 3 messages" in err
    code, again, err = await _run(elsewhere, "export", session_id)
    assert code == 0, err
    assert json.loads(again)["messages"] == exported["messages"]
    assert [row[0] for row in await _sessions(elsewhere)] == [session_id]


async def test_importing_where_the_ids_exist_makes_a_copy(
    settings: Settings, tmp_path: Path
) -> None:
    session_id = await _made_session(settings)
    path = tmp_path / "s.json"
    code, _, err = await _run(settings, "export", session_id, "-o", str(path))
    assert code == 0 and f"wrote {session_id} to {path}" in err
    code, out, err = await _run(settings, "import", str(path))
    assert code == 0, err
    copy_id = out.strip()
    assert copy_id.startswith("ses_") and copy_id != session_id
    assert "as a copy" in err
    _, original, _ = await _run(settings, "export", session_id)
    _, copied, _ = await _run(settings, "export", copy_id)
    originals, copies = json.loads(original)["messages"], json.loads(copied)["messages"]
    assert [m["info"]["id"] for m in originals] != [m["info"]["id"] for m in copies]
    texts = [[p.get("text") for p in m["parts"]] for m in originals]
    assert texts == [[p.get("text") for p in m["parts"]] for m in copies]
    assert sorted(row[0] for row in await _sessions(settings)) == sorted([session_id, copy_id])


async def test_markdown_export_reads_as_a_conversation(settings: Settings) -> None:
    session_id = await _made_session(settings)
    code, out, err = await _run(settings, "export", session_id, "--format", "markdown")
    assert code == 0, err
    assert out.startswith("# Moving\n")
    assert "## User\n\nbash echo moved" in out
    assert "## Assistant (demo/demo)" in out
    assert "**Tool: bash** (completed)" in out and "```\nmoved\n```" in out


async def test_bad_files_are_one_line_and_store_nothing(settings: Settings, tmp_path: Path) -> None:
    session_id = await _made_session(settings)
    cases = {
        "missing.json": None,
        "text.json": "not json",
        "shape.json": json.dumps({"info": 1, "messages": []}),
    }
    for name, content in cases.items():
        if content is not None:
            (tmp_path / name).write_text(content)
        code, out, err = await _run(settings, "import", str(tmp_path / name))
        assert code == 1 and out == "", (name, err)
        assert err.startswith("error: ") and "Traceback" not in err, err
        assert len(err.strip().splitlines()) <= 2, err
    code, _, err = await _run(settings, "export", "ses_nothere")
    assert code == 1 and "Traceback" not in err and "ses_nothere" in err
    assert [row[0] for row in await _sessions(settings)] == [session_id]
