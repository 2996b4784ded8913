"""Settings from files and environment: precedence, substitution, clear errors, no leaked keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from partwire.config import load_settings, redact, write_project_config
from partwire.errors import ConfigError


def _files(
    tmp_path: Path, user: dict[str, object] | None, project: dict[str, object] | None
) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "proj"
    root.mkdir()
    (tmp_path / "cfg").mkdir()
    if user is not None:
        (tmp_path / "cfg" / "partwire.json").write_text(json.dumps(user))
    if project is not None:
        (root / "partwire.json").write_text(json.dumps(project))
    return root, {"PARTWIRE_CONFIG_DIR": str(tmp_path / "cfg")}


def test_project_config_wins_over_user_config(tmp_path: Path) -> None:
    user = {"model": "openai/gpt-4o", "provider": {"local": {"options": {"baseURL": "http://a"}}}}
    project = {"model": "local/llama", "provider": {"local": {"options": {"timeout": 5000}}}}
    root, env = _files(tmp_path, user, project)
    settings = load_settings(project_dir=root, env=env)
    assert settings.default_model == "local/llama"
    local = settings.providers["local"]
    assert (local.api, local.base_url, local.timeout_s) == ("openai-compatible", "http://a", 5.0)
    assert len(settings.config_files) == 2


def test_env_references_are_substituted_and_keys_stay_hidden(tmp_path: Path) -> None:
    project = {
        "provider": {"openai": {"options": {"apiKey": "{env:MY_KEY}", "headers": {"X-Org": "o"}}}}
    }
    root, env = _files(tmp_path, None, project)
    settings = load_settings(project_dir=root, env={**env, "MY_KEY": "sk-secret"})
    assert settings.providers["openai"].api_key == "sk-secret"
    assert "sk-secret" not in repr(settings)
    shown = json.dumps(redact(settings.raw_config))
    assert "sk-secret" not in shown and '"X-Org": "[redacted]"' in shown


def test_a_key_in_the_environment_enables_the_provider(tmp_path: Path) -> None:
    root, env = _files(tmp_path, None, None)
    settings = load_settings(project_dir=root, env={**env, "ANTHROPIC_API_KEY": "k"})
    assert settings.providers["anthropic"].api == "anthropic"
    assert settings.providers["anthropic"].api_key == "k"
    assert settings.default_model == "anthropic/claude-sonnet-4-5"  # the key picks the default


def test_opencode_npm_names_select_the_api(tmp_path: Path) -> None:
    project = {"provider": {"x": {"npm": "@ai-sdk/anthropic"}, "y": {"npm": "@ai-sdk/openai"}}}
    root, env = _files(tmp_path, None, project)
    providers = load_settings(project_dir=root, env=env).providers
    assert (providers["x"].api, providers["y"].api) == ("anthropic", "openai")


@pytest.mark.parametrize(
    ("project", "message"),
    [
        ("{not json", "is not valid JSON (line 1"),
        ({"provider": {"p": {"api": "cohere"}}}, "provider.p.api is 'cohere'"),
        ([1, 2], "must hold a JSON object"),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path: Path, project: object, message: str) -> None:
    root, env = _files(tmp_path, None, None)
    (root / "partwire.json").write_text(
        project if isinstance(project, str) else json.dumps(project)
    )
    with pytest.raises(
        ConfigError, match=message.replace("(", r"\(").replace("{", r"\{").replace("}", r"\}")
    ):
        load_settings(project_dir=root, env=env)


def test_writing_the_project_config_merges_and_validates(tmp_path: Path) -> None:
    root, env = _files(
        tmp_path, None, {"model": "demo/demo", "provider": {"p": {"options": {"apiKey": "k"}}}}
    )
    settings = load_settings(project_dir=root, env=env)
    write_project_config(
        settings, {"model": "p/m", "provider": {"p": {"options": {"apiKey": "[redacted]"}}}}
    )
    written = json.loads((root / "partwire.json").read_text())
    assert written == {"model": "p/m", "provider": {"p": {"options": {"apiKey": "k"}}}}
    with pytest.raises(ConfigError):
        write_project_config(settings, {"provider": {"p": {"api": "nope"}}})
    assert json.loads((root / "partwire.json").read_text()) == written


def test_partwire_json_may_hold_comments_and_trailing_commas(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "partwire.json").write_text(
        '{\n  // the model everyone uses\n  "model": "demo/demo",\n'
        '  /* a block\n comment */ "server": {"cors": ["http://a.example//x"],},\n}\n'
    )
    settings = load_settings(project_dir=project, data_dir=tmp_path / "d", env={})
    assert settings.default_model == "demo/demo"
    assert settings.ignored_keys == ("server.cors",)  # a project may not set it


def test_an_unset_variable_breaks_only_its_provider(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    config = {
        "provider": {
            "broken": {"options": {"apiKey": "{env:NOT_SET_ANYWHERE}"}},
            "fine": {"options": {"apiKey": "literal"}},
        }
    }
    (project / "partwire.json").write_text(json.dumps(config))
    settings = load_settings(project_dir=project, data_dir=tmp_path / "d", env={})
    assert settings.providers["fine"].api_key == "literal"
    broken = settings.providers["broken"]
    assert broken.api_key is None and broken.blocked is not None
    assert "NOT_SET_ANYWHERE is not set" in broken.blocked


@pytest.mark.parametrize(
    ("env", "model"),
    [
        ({}, "demo/demo"),
        ({"OPENAI_API_KEY": "sk-o"}, "openai/gpt-4.1"),
        ({"ANTHROPIC_API_KEY": "sk-a"}, "anthropic/claude-sonnet-4-5"),
        ({"OPENAI_API_KEY": "sk-o", "PARTWIRE_MODEL": "demo/demo"}, "demo/demo"),
    ],
)
def test_the_default_model_follows_the_configured_key(
    tmp_path: Path, env: dict[str, str], model: str
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    settings = load_settings(
        project_dir=project,
        data_dir=tmp_path / "d",
        env={**env, "PARTWIRE_CONFIG_DIR": str(tmp_path)},
    )
    assert settings.default_model == model


def test_a_database_url_selects_postgres_and_anything_else_is_refused(tmp_path: Path) -> None:
    root, env = _files(tmp_path, None, None)
    assert load_settings(project_dir=root, env=env).database_url is None
    url = "postgresql://partwire@127.0.0.1:5432/partwire"
    chosen = load_settings(project_dir=root, env={**env, "PARTWIRE_DATABASE_URL": url})
    assert chosen.database_url == url
    for wrong in ("mysql://u@h/db", "sqlite:///tmp/x.db", "127.0.0.1:5432"):
        with pytest.raises(ConfigError, match="PARTWIRE_DATABASE_URL must be a postgresql://"):
            load_settings(project_dir=root, env={**env, "PARTWIRE_DATABASE_URL": wrong})


def test_a_redis_url_needs_a_database_url_and_a_redis_scheme(tmp_path: Path) -> None:
    root, env = _files(tmp_path, None, None)
    database = {**env, "PARTWIRE_DATABASE_URL": "postgresql://partwire@127.0.0.1:5432/pw"}
    assert load_settings(project_dir=root, env=database).redis_url is None
    redis = "redis://127.0.0.1:6379/0"
    chosen = load_settings(project_dir=root, env={**database, "PARTWIRE_REDIS_URL": redis})
    assert chosen.redis_url == redis
    with pytest.raises(ConfigError, match="set PARTWIRE_DATABASE_URL too"):
        load_settings(project_dir=root, env={**env, "PARTWIRE_REDIS_URL": redis})
    for wrong in ("http://127.0.0.1:6379", "127.0.0.1:6379"):
        with pytest.raises(ConfigError, match="PARTWIRE_REDIS_URL must be a redis://"):
            load_settings(project_dir=root, env={**database, "PARTWIRE_REDIS_URL": wrong})
