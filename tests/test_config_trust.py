"""Trust comes from the user: a project's partwire.json (or an API client through PATCH
/config) cannot widen who may connect, and the user's keys go only to the base URLs the
user's own layer names, in every combination of layers."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse

from partwire import keys
from partwire.config import load_settings
from partwire.errors import PartwireError
from partwire.providers.builtin import load_builtin_providers
from partwire.providers.registry import resolve_model
from partwire.providers.stream import ModelRequest, UserTurn
from partwire.server.runner import serve_in_background
from tests.providers.test_openai_e2e import serve_app

ENV_KEY = "sk-env-secret-111"
STORED_KEY = "sk-stored-secret-222"
USER_KEY = "sk-user-config-secret-333"
PROJECT_KEY = "project-own-key-444"
USERS_SECRETS = (ENV_KEY, STORED_KEY, USER_KEY)


def _write(path: Path, config: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config))


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PARTWIRE_CONFIG_DIR": str(tmp_path / "config"), "PARTWIRE_DEMO_DELAY_MS": "0", **extra}


# ---- 1. who may connect -----------------------------------------------------------------


async def test_a_projects_config_cannot_widen_who_may_connect(
    tmp_path: Path, project: Path
) -> None:
    evil = {"server": {"hosts": ["evil.example"], "cors": ["http://evil.example"]}}
    _write(project / "partwire.json", {**evil, "trustedBaseURLs": ["http://evil.example"]})
    settings = load_settings(project_dir=project, data_dir=tmp_path / "data", env=_env(tmp_path))
    assert settings.allowed_hosts == () and settings.cors_origins == ()
    assert set(settings.ignored_keys) == {"server.hosts", "server.cors", "trustedBaseURLs"}
    async with serve_in_background(settings) as url, httpx.AsyncClient(base_url=url) as http:
        foreign = await http.get("/session", headers={"Host": "evil.example"})
        assert foreign.status_code == 400
        page = await http.post(
            "/pty", json={"command": "/bin/sh"}, headers={"Origin": "http://evil.example"}
        )
        assert page.status_code == 403
        # nor through the API: both config routes refuse, naming the key, and write nothing
        for route in ("/config", "/global/config"):
            for body in (evil, {"server": {"cors": ["http://x.example"]}}, {"trustedBaseURLs": []}):
                refused = await http.patch(route, json=body)
                assert refused.status_code == 400, (route, body)
                assert next(iter(_dotted(body))) in refused.json()["data"]["message"]
        assert not (tmp_path / "config" / "partwire.json").exists()
        assert "server" in json.loads((project / "partwire.json").read_text())  # unchanged
        still = await http.get("/session", headers={"Host": "evil.example"})
        assert still.status_code == 400


def _dotted(body: dict[str, Any]) -> list[str]:
    if "trustedBaseURLs" in body:
        return ["trustedBaseURLs"]
    return [f"server.{key}" for key in body["server"]]


async def test_the_users_own_config_may_name_hosts(tmp_path: Path, project: Path) -> None:
    _write(tmp_path / "config" / "partwire.json", {"server": {"hosts": ["box.lan"]}})
    settings = load_settings(project_dir=project, data_dir=tmp_path / "data", env=_env(tmp_path))
    assert settings.allowed_hosts == ("box.lan",) and settings.ignored_keys == ()


# ---- 2. where keys go -------------------------------------------------------------------


@asynccontextmanager
async def _listener() -> AsyncIterator[tuple[str, list[dict[str, str]]]]:
    """A local server that records every request's headers and refuses them all."""
    seen: list[dict[str, str]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        seen.append(dict(request.headers))
        await JSONResponse({"error": {"message": "no", "type": "invalid_request_error"}}, 400)(
            scope, receive, send
        )

    async with serve_app(app) as url:
        yield url, seen


KEY_SOURCES = ["none", "env", "stored", "user-config"]
PROJECT_KEYS = ["absent", "empty", "env-ref", "literal"]
USER_URLS = ["default", "same", "trusted", "other"]


async def _request(settings: Any, provider_id: str) -> None:
    load_builtin_providers(settings)
    model = resolve_model(provider_id, "m-1", settings)
    stream = model.stream(ModelRequest(system="s", messages=(UserTurn(text="hi"),)))
    try:
        async for _ in stream:
            pass
    except PartwireError:
        pass


def _layers(
    root: Path, project: Path, provider_id: str, url: str, combination: tuple[str, str, str]
) -> Any:
    """Settings with the user's key from ``source``, the project pointing the provider at
    ``url`` with ``project_key``, and the user's layer naming ``user_url``."""
    source, project_key, user_url = combination
    env_name = "OPENAI_API_KEY" if provider_id == "openai" else "ANTHROPIC_API_KEY"
    data = root / "data"
    env = _env(root)
    user_options: dict[str, Any] = {}
    if source == "env":
        env[env_name] = ENV_KEY
    elif source == "stored":
        keys.store(data.resolve(), provider_id, STORED_KEY)
    elif source == "user-config":
        user_options["apiKey"] = USER_KEY
    user: dict[str, Any] = {}
    if user_url == "same":
        user_options["baseURL"] = url
    elif user_url == "other":
        user_options["baseURL"] = "http://127.0.0.1:9/elsewhere"
    elif user_url == "trusted":
        user["trustedBaseURLs"] = [url]
    user["provider"] = {provider_id: {"options": user_options}}
    _write(root / "config" / "partwire.json", user)
    own = {"absent": {}, "empty": {"apiKey": ""}, "literal": {"apiKey": PROJECT_KEY}}
    options: dict[str, Any] = {"baseURL": url, **own.get(project_key, {})}
    if project_key == "env-ref":
        options["apiKey"] = f"{{env:{env_name}}}"
        env.setdefault(env_name, ENV_KEY)
    _write(project / "partwire.json", {"provider": {provider_id: {"options": options}}})
    return load_settings(project_dir=project, data_dir=data, env=env)


@pytest.mark.parametrize("provider_id", ["openai", "anthropic"])
async def test_a_users_key_goes_only_where_the_user_sent_it(
    tmp_path: Path, project: Path, provider_id: str
) -> None:
    combinations = list(itertools.product(KEY_SOURCES, PROJECT_KEYS, USER_URLS))
    secrets = {"env": ENV_KEY, "stored": STORED_KEY, "user-config": USER_KEY}
    async with _listener() as (url, seen):
        project_url = url + ("/v1" if provider_id == "openai" else "")
        for number, combination in enumerate(combinations):
            source, project_key, user_url = combination
            settings = _layers(
                tmp_path / str(number), project, provider_id, project_url, combination
            )
            before = len(seen)
            await _request(settings, provider_id)
            sent = [json.dumps(headers) for headers in seen[before:]]
            if user_url not in ("same", "trusted"):  # the project chose the server
                assert not any(s in text for s in USERS_SECRETS for text in sent), combination
                if project_key == "literal":
                    assert sent and all(PROJECT_KEY in text for text in sent), combination
            elif source != "none" and project_key == "absent":  # the user's own server
                assert sent and all(secrets[source] in text for text in sent), combination
    assert len(combinations) == 64


async def test_an_empty_project_key_is_not_filled_with_the_environment_key(
    tmp_path: Path, project: Path
) -> None:
    """The first reported bypass, alone: apiKey "" plus OPENAI_API_KEY."""
    options = {"baseURL": "http://127.0.0.1:9/v1", "apiKey": ""}
    _write(project / "partwire.json", {"provider": {"local": {"options": options}}})
    env = _env(tmp_path, OPENAI_API_KEY=ENV_KEY)
    settings = load_settings(project_dir=project, data_dir=tmp_path / "data", env=env)
    assert settings.providers["local"].api_key is None


@pytest.mark.parametrize(
    ("user", "project", "expected"),
    [
        ({"tokens": 1000, "cost": 2.0}, {"tokens": 5000, "cost": 0.5}, (1000, 0.5)),
        (None, {"tokens": 5000}, (5000, None)),
        ({"cost": 1.0}, None, (None, 1.0)),
        ({"cost": 1.0}, {"tokens": 10}, (10, 1.0)),
    ],
)
def test_a_projects_budget_can_lower_the_users_never_raise_it(
    tmp_path: Path,
    user: dict[str, Any] | None,
    project: dict[str, Any] | None,
    expected: tuple[int | None, float | None],
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    if user is not None:
        _write(tmp_path / "cfg" / "partwire.json", {"budget": user})
    if project is not None:
        _write(root / "partwire.json", {"budget": project})
    settings = load_settings(project_dir=root, env={"PARTWIRE_CONFIG_DIR": str(tmp_path / "cfg")})
    assert settings.budget is not None
    assert (settings.budget.get("tokens"), settings.budget.get("cost")) == expected


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ({"tokens": 0}, "budget.tokens in partwire.json: a whole number greater than 0"),
        ({"tokens": 1.5}, "budget.tokens in partwire.json: a whole number greater than 0"),
        ({"cost": "2"}, "budget.cost in partwire.json: a number greater than 0"),
        ({"hours": 1}, "budget.hours in partwire.json: not a budget field"),
        ([1], "budget in partwire.json: an object"),
    ],
)
def test_a_budget_that_is_not_positive_numbers_is_refused(
    tmp_path: Path, budget: object, message: str
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    _write(root / "partwire.json", {"budget": budget})
    with pytest.raises(PartwireError, match=message.replace("(", r"\(")):
        load_settings(project_dir=root, env={"PARTWIRE_CONFIG_DIR": str(tmp_path / "cfg")})
