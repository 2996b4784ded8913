"""Secrets in configuration: no route reads an environment variable back, and a project's
partwire.json cannot send the user's API key to a server of its choosing."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from partwire.config import load_settings
from partwire.server.runner import serve_in_background
from tests.providers.mock_openai import MockOpenAI, text
from tests.providers.test_openai_e2e import serve_app

KEY = "sk-user-secret-777"
PASSWORD = "server-password-888"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "PARTWIRE_DEMO_DELAY_MS": "0",
        "PARTWIRE_CONFIG_DIR": str(tmp_path / "config"),
        "SECRET_MODEL_NAME": "hidden-model-name",
        **extra,
    }


def _write(path: Path, config: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config))


async def test_get_config_serves_the_config_as_written(tmp_path: Path, project: Path) -> None:
    _write(
        tmp_path / "config" / "partwire.json",
        {
            "model": "{env:SECRET_MODEL_NAME}",
            "provider": {
                "local": {
                    "options": {
                        "baseURL": "http://127.0.0.1:9/{env:SECRET_MODEL_NAME}",
                        "apiKey": "literal-key-555",
                        "headers": {"X-Token": "{env:SECRET_MODEL_NAME}", "X-Raw": "raw-666"},
                    }
                }
            },
        },
    )
    settings = load_settings(project_dir=project, data_dir=tmp_path / "data", env=_env(tmp_path))
    assert settings.providers["local"].headers["X-Token"] == "hidden-model-name"  # used
    async with serve_in_background(settings) as url, httpx.AsyncClient(base_url=url) as http:
        body = (await http.get("/config")).text
    assert "hidden-model-name" not in body and "literal-key-555" not in body
    assert "raw-666" not in body
    config = json.loads(body)
    assert config["model"] == "{env:SECRET_MODEL_NAME}"
    options = config["provider"]["local"]["options"]
    assert options["headers"]["X-Token"] == "{env:SECRET_MODEL_NAME}"  # names, not values
    assert options["apiKey"] == "[redacted]" and options["headers"]["X-Raw"] == "[redacted]"


async def test_patch_config_cannot_read_the_server_password_back(
    tmp_path: Path, project: Path
) -> None:
    env = _env(tmp_path, PARTWIRE_SERVER_PASSWORD=PASSWORD)
    settings = load_settings(project_dir=project, data_dir=tmp_path / "data", env=env)
    auth = ("partwire", PASSWORD)
    async with (
        serve_in_background(settings) as url,
        httpx.AsyncClient(base_url=url, auth=auth) as http,
    ):
        patch = {
            "model": "{env:PARTWIRE_SERVER_PASSWORD}",
            "username": "{env:PARTWIRE_SERVER_PASSWORD}",
        }
        response = await http.patch("/config", json=patch)
        assert PASSWORD not in response.text
        for path in ("/config", "/config/providers", "/provider", "/agent"):
            assert PASSWORD not in (await http.get(path)).text, path
    assert PASSWORD not in (project / "partwire.json").read_text()


async def test_a_project_cannot_redirect_the_users_key(tmp_path: Path, project: Path) -> None:
    mock = MockOpenAI(script=[text("hello", " there")])
    async with serve_app(mock.app()) as mock_url:
        base = f"{mock_url}/v1"
        project_config = {
            "model": "openai/gpt-4o",
            "provider": {"openai": {"api": "openai-compatible", "options": {"baseURL": base}}},
        }
        _write(project / "partwire.json", project_config)
        env = _env(tmp_path, OPENAI_API_KEY=KEY)
        settings = load_settings(project_dir=project, data_dir=tmp_path / "data", env=env)
        assert settings.providers["openai"].api_key is None
        async with serve_in_background(settings) as url, httpx.AsyncClient(base_url=url) as http:
            sid = (await http.post("/session", json={})).json()["id"]
            body = {"parts": [{"type": "text", "text": "hi"}]}
            answer = (await http.post(f"/session/{sid}/message", json=body, timeout=30)).json()
        assert mock.requests == []  # the key never left
        error = answer["info"]["error"]
        assert error["name"] == "ProviderAuthError"
        assert "trustedBaseURLs" in error["data"]["message"] and base in error["data"]["message"]

        # the user trusts that server in their own config: now the key goes there
        _write(tmp_path / "config" / "partwire.json", {"trustedBaseURLs": [base]})
        settings = load_settings(project_dir=project, data_dir=tmp_path / "data", env=env)
        async with serve_in_background(settings) as url, httpx.AsyncClient(base_url=url) as http:
            sid = (await http.post("/session", json={})).json()["id"]
            answer = (await http.post(f"/session/{sid}/message", json=body, timeout=30)).json()
        assert "error" not in answer["info"]
        assert mock.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"


def test_a_projects_own_literal_key_may_go_to_its_own_server(tmp_path: Path, project: Path) -> None:
    options = {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "project-own-key"}
    _write(project / "partwire.json", {"provider": {"team": {"options": options}}})
    settings = load_settings(project_dir=project, data_dir=tmp_path / "data", env=_env(tmp_path))
    assert settings.providers["team"].api_key == "project-own-key"
    assert settings.providers["team"].blocked is None
    # but an {env:} reference in the project's config is the user's secret
    options["apiKey"] = "{env:SECRET_MODEL_NAME}"
    _write(project / "partwire.json", {"provider": {"team": {"options": options}}})
    settings = load_settings(project_dir=project, data_dir=tmp_path / "data", env=_env(tmp_path))
    assert settings.providers["team"].api_key is None and settings.providers["team"].blocked


def test_a_project_server_without_any_key_is_usable(tmp_path: Path, project: Path) -> None:
    _write(
        project / "partwire.json",
        {"provider": {"local": {"options": {"baseURL": "http://127.0.0.1:9/v1"}}}},
    )
    settings = load_settings(project_dir=project, data_dir=tmp_path / "data", env=_env(tmp_path))
    assert settings.providers["local"].blocked is None  # an Ollama on loopback needs no key


async def test_credentials_in_a_base_url_are_redacted_in_every_view(
    tmp_path: Path, project: Path
) -> None:
    url = "http://ada:hunter2-secret@127.0.0.1:9/v1"
    provider = {"local": {"options": {"baseURL": url}, "models": {"m": {}}}}
    _write(tmp_path / "config" / "partwire.json", {"provider": provider})
    _write(project / "partwire.json", {"provider": provider})
    settings = load_settings(project_dir=project, data_dir=tmp_path / "data", env=_env(tmp_path))
    async with serve_in_background(settings) as base, httpx.AsyncClient(base_url=base) as http:
        for route in ("/config", "/global/config", "/provider", "/config/providers", "/api/model"):
            response = await http.get(route)
            assert response.status_code == 200, route
            assert "hunter2" not in response.text and "127.0.0.1:9" in response.text, route
        shown = (await http.get("/config")).json()
        # a client that sends the config back as shown changes nothing
        patched = await http.patch("/config", json=shown)
        assert patched.status_code == 200, patched.text
    stored = json.loads((project / "partwire.json").read_text())
    assert stored["provider"]["local"]["options"]["baseURL"] == url
