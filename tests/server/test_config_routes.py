"""GET/PATCH /config, /config/providers and /provider, shaped like opencode's."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.reference import response_schema, validate, validate_schema


async def test_provider_listing_matches_the_reference(http: httpx.AsyncClient) -> None:
    listing = (await http.get("/provider")).json()
    validate_schema(response_schema("/provider", "get"), listing)
    assert listing["connected"] == ["demo"]
    assert listing["default"] == {"demo": "demo"}
    providers = (await http.get("/config/providers")).json()
    validate_schema(response_schema("/config/providers", "get"), providers)


async def test_patch_config_adds_a_provider_and_never_shows_its_key(
    http: httpx.AsyncClient, project: Path
) -> None:
    patch = {
        "model": "openai/gpt-4o",
        "provider": {"openai": {"options": {"apiKey": "sk-patched-secret"}}},
    }
    response = await http.patch("/config", json=patch)
    assert response.status_code == 200, response.text
    config = response.json()
    validate("Config", config)
    assert config["provider"]["openai"]["options"]["apiKey"] == "[redacted]"
    assert json.loads((project / "partwire.json").read_text())["model"] == "openai/gpt-4o"
    listing = (await http.get("/provider")).json()
    openai = next(p for p in listing["all"] if p["id"] == "openai")
    assert "gpt-4o" in openai["models"]
    assert openai["models"]["gpt-4o"]["cost"]["input"] == 2.5
    assert listing["connected"] == ["demo", "openai"] and listing["default"]["openai"] == "gpt-4o"
    everything = json.dumps(listing) + (await http.get("/config")).text
    assert "sk-patched-secret" not in everything


async def test_a_bad_patch_is_400_and_changes_nothing(
    http: httpx.AsyncClient, project: Path
) -> None:
    response = await http.patch("/config", json={"provider": {"x": {"api": "nope"}}})
    assert response.status_code == 400
    assert "provider.x.api is 'nope'" in response.json()["data"]["message"]
    assert not (project / "partwire.json").exists()
