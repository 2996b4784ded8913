"""A model's prepared request parameters are reused while the tools stay the same."""

from __future__ import annotations

from partwire.config import ProviderConfig
from partwire.providers import library
from partwire.providers.configured import ProviderClient
from partwire.providers.stream import ModelRequest, ToolSpec, UserTurn

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def _request(*tools: ToolSpec) -> ModelRequest:
    return ModelRequest(system="s", messages=[UserTurn(text="go")], tools=tools)


def test_the_same_tools_reuse_the_prepared_parameters() -> None:
    config = ProviderConfig(id="p", api="openai-compatible", base_url="http://127.0.0.1:9/v1")
    model = ProviderClient(config).model("m")
    read = ToolSpec("read", "Read a file.", dict(SCHEMA))
    first = library._prepared(model, _request(read), "p")
    again = library._prepared(model, _request(ToolSpec("read", "Read a file.", dict(SCHEMA))), "p")
    assert again is first
    [tool] = first[1].function_tools
    assert tool.name == "read" and tool.parameters_json_schema["required"] == ["path"]
    changed = library._prepared(model, _request(ToolSpec("read", "Read it.", SCHEMA)), "p")
    assert changed is not first and changed[1].function_tools[0].description == "Read it."
    other_model = ProviderClient(config).model("m2")
    assert library._prepared(other_model, _request(read), "p") is not first


def test_the_kept_parameters_are_bounded() -> None:
    config = ProviderConfig(id="p", api="openai-compatible", base_url="http://127.0.0.1:9/v1")
    model = ProviderClient(config).model("m")
    for n in range(library._PREPARED_MAX + 10):
        library._prepared(model, _request(ToolSpec(f"t{n}", "d", SCHEMA)), "p")
    assert len(library._PREPARED) == library._PREPARED_MAX
