"""Settings: the only module that reads the environment or settings files.

Sources, later ones winning: the user's ``partwire.json`` (user config dir, or
``PARTWIRE_CONFIG_DIR``), the project's ``partwire.json``, environment variables,
explicit arguments. ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` enable those
providers without a file.

Secrets: only the secret fields (``options.apiKey`` and ``options.headers``) may say
``{env:NAME}``; everywhere else such text is kept as written, so no route can read an
environment variable back. A project's ``partwire.json`` is not trusted (it comes
with whatever was cloned): it may not set who connects (``USER_ONLY``), and whose keys
go where is decided in ``config_providers``.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from partwire import keys
from partwire.config_providers import APIS as APIS
from partwire.config_providers import BUILTIN_PROVIDERS as BUILTIN_PROVIDERS
from partwire.config_providers import ENV_REF, KEY_ENV, configured_providers
from partwire.config_providers import Api as Api
from partwire.config_providers import ModelConfig as ModelConfig
from partwire.config_providers import ProviderConfig as ProviderConfig
from partwire.errors import ConfigError

log = logging.getLogger(__name__)

CONFIG_FILE = "partwire.json"


DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4096
DEFAULT_DEMO_DELAY_MS = 25
DEFAULT_HEARTBEAT_S = 30.0
DEFAULT_EVENT_LOG_RETAIN = 200_000
DEFAULT_INGEST_MAX_BYTES = 32 * 1024 * 1024  # one ingested message, all its lines


@dataclass(frozen=True)
class Settings:
    """Everything configurable, resolved once at start-up."""

    data_dir: Path
    project_dir: Path
    demo_delay_ms: float = DEFAULT_DEMO_DELAY_MS
    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    event_log_retain: int = DEFAULT_EVENT_LOG_RETAIN
    ingest_max_bytes: int = DEFAULT_INGEST_MAX_BYTES
    # how often a running server checks its config files for changes (0: never)
    config_watch_s: float = 1.0
    default_model: str = "demo/demo"
    providers: dict[str, ProviderConfig] = field(default_factory=dict)
    config_files: tuple[Path, ...] = ()
    raw_config: dict[str, Any] = field(default_factory=dict, repr=False)
    # keys of the project's partwire.json that only the user may set (USER_ONLY), unused
    ignored_keys: tuple[str, ...] = ()
    source_env: dict[str, str] = field(default_factory=dict, repr=False)
    server_username: str = "partwire"
    server_password: str | None = field(default=None, repr=False)
    # PARTWIRE_TOKEN: what the CLI's clients sign in to a server with (a user's token)
    client_token: str | None = field(default=None, repr=False)
    # the server a CLI command starts in its own process (no quotas: one user, its own)
    embedded: bool = False
    cors_origins: tuple[str, ...] = ()
    # host names the server is reached by besides loopback ones (server.hosts, --hostname)
    allowed_hosts: tuple[str, ...] = ()
    # listening on loopback only: with no user and no password, callers are the local admin
    open_locally: bool = True
    subscriber_queue: int = 10_000
    # PARTWIRE_DATABASE_URL: a Postgres database instead of the data dir's SQLite file
    database_url: str | None = field(default=None, repr=False)
    # PARTWIRE_REDIS_URL: events reach the other servers on the database through Redis
    redis_url: str | None = field(default=None, repr=False)
    # what each session may spend unless it has a budget of its own (``budget``:
    # tokens and/or cost, checked here, read as session.budget's Budget)
    budget: dict[str, float] | None = None

    def reload(self) -> Settings:
        """The settings as the files and environment say now (after a PATCH /config)."""
        return load_settings(
            project_dir=self.project_dir, data_dir=self.data_dir, env=self.source_env
        )

    @property
    def database_path(self) -> Path:
        return self.data_dir / "partwire.db"


# The model used when nothing names one, by the provider whose key is set (first wins).
DEFAULT_MODELS = {"anthropic": "anthropic/claude-sonnet-4-5", "openai": "openai/gpt-4.1"}


def _default(providers: dict[str, ProviderConfig]) -> str:
    for provider_id, model in DEFAULT_MODELS.items():
        found = providers.get(provider_id)
        if found is not None and found.api_key and not found.blocked:
            return model
    return "demo/demo"


def key_source(provider_id: str) -> str:
    """Where a provider's key comes from, in words for an error message."""
    variable = KEY_ENV.get(provider_id)
    config = f"provider.{provider_id}.options.apiKey in partwire.json"
    return f"{variable} (or {config})" if variable else config


def _database_url(env: dict[str, str]) -> str | None:
    raw = env.get("PARTWIRE_DATABASE_URL") or None
    if raw is not None and not raw.startswith(("postgresql://", "postgres://")):
        scheme = raw.split("://", 1)[0] if "://" in raw else raw[:20]
        raise ConfigError(
            f"PARTWIRE_DATABASE_URL must be a postgresql:// URL (got {scheme!r}); "
            "unset it to use the SQLite file in the data dir"
        )
    return raw


def _redis_url(env: dict[str, str], database_url: str | None) -> str | None:
    raw = env.get("PARTWIRE_REDIS_URL") or None
    if raw is None:
        return None
    if not raw.startswith(("redis://", "rediss://", "unix://")):
        scheme = raw.split("://", 1)[0] if "://" in raw else raw[:20]
        raise ConfigError(
            f"PARTWIRE_REDIS_URL must be a redis://, rediss:// or unix:// URL (got {scheme!r})"
        )
    if database_url is None:
        raise ConfigError(
            "PARTWIRE_REDIS_URL carries events between servers that share one Postgres "
            "database: set PARTWIRE_DATABASE_URL too, or unset PARTWIRE_REDIS_URL"
        )
    return raw


BUDGET_KEYS = ("tokens", "cost")


def _budget_of(raw: object) -> dict[str, float]:
    """One layer's ``budget``: positive ``tokens`` (a whole number) and ``cost``."""
    if not isinstance(raw, dict):
        raise ConfigError("budget in partwire.json: an object with tokens and/or cost")
    for key, value in raw.items():
        if key not in BUDGET_KEYS:
            raise ConfigError(f"budget.{key} in partwire.json: not a budget field (tokens, cost)")
        whole = isinstance(value, int) and not isinstance(value, bool)
        number = whole or isinstance(value, float)
        if not number or value <= 0 or (key == "tokens" and not whole):
            kind = "a whole number" if key == "tokens" else "a number"
            raise ConfigError(f"budget.{key} in partwire.json: {kind} greater than 0")
    return dict(raw)


def _budget(user: dict[str, Any], project: dict[str, Any]) -> dict[str, float] | None:
    """``budget`` of the user's partwire.json and the project's, the stricter of each
    limit: a cloned project may lower what a session spends, never raise it."""
    found = [_budget_of(layer["budget"]) for layer in (user, project) if "budget" in layer]
    if not found:
        return None
    return {
        key: min(b[key] for b in found if key in b)
        for key in BUDGET_KEYS
        if any(key in b for b in found)
    }


def _float_env(env: dict[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number; set it to e.g. {default}") from None
    if value < 0:
        raise ConfigError(f"{name}={raw!r} must not be negative")
    return value


def strip_jsonc(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas, as opencode's config
    accepts, turned into plain JSON. Strings are left alone."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            i = n if close < 0 else close + 2
        else:
            out.append(char)
            i += 1
    return _TRAILING_COMMA.sub(r"\1", "".join(out))


_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _read(path: Path, env: dict[str, str]) -> dict[str, Any]:
    try:
        data = json.loads(strip_jsonc(path.read_text()))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object")
    return data


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of two config objects; ``override`` wins."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def user_config_dir(env: dict[str, str]) -> Path:
    return Path(
        env.get("PARTWIRE_CONFIG_DIR") or platformdirs.user_config_dir("partwire", appauthor=False)
    )


def config_paths(project_dir: Path, env: dict[str, str]) -> list[Path]:
    user = user_config_dir(env) / CONFIG_FILE
    return [p for p in (user, project_dir / CONFIG_FILE) if p.is_file()]


# Who may connect, and where the user's keys may go: the user's own config and the
# command line only, never a project's partwire.json (it comes with whatever was cloned)
# nor PATCH /config or /global/config (a client of the API is not the user).
USER_ONLY = (("server", "hosts"), ("server", "cors"), ("trustedBaseURLs",))


def user_only_keys(config: dict[str, Any]) -> list[str]:
    """The USER_ONLY keys ``config`` sets, dotted."""
    found = []
    for path in USER_ONLY:
        value: Any = config
        for step in path:
            value = value.get(step) if isinstance(value, dict) else None
        if value is not None:
            found.append(".".join(path))
    return found


def _without_user_only(config: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    found = user_only_keys(config)
    if not found:
        return config, ()
    kept = dict(config)
    kept.pop("trustedBaseURLs", None)
    if isinstance(kept.get("server"), dict):
        kept["server"] = {k: v for k, v in kept["server"].items() if k not in ("hosts", "cors")}
    return kept, tuple(found)


def _strings(config: dict[str, Any], table: str, key: str) -> tuple[str, ...]:
    found = (config.get(table) or {}).get(key) or []
    if not isinstance(found, list) or not all(isinstance(v, str) for v in found):
        raise ConfigError(f"{table}.{key} must be a list of strings")
    return tuple(found)


def load_settings(
    *,
    project_dir: Path | None = None,
    data_dir: Path | None = None,
    env: dict[str, str] | None = None,
) -> Settings:
    """Build settings from explicit arguments, environment, config files, then defaults."""
    source = dict(os.environ) if env is None else env
    project = (project_dir or Path.cwd()).resolve()
    files = config_paths(project, source)
    config: dict[str, Any] = {}
    layers: dict[Path, dict[str, Any]] = {}
    for path in files:
        layers[path] = _read(path, source)
    project_layer, ignored = _without_user_only(layers.get(project / CONFIG_FILE, {}))
    user_layer = next((v for k, v in layers.items() if k != project / CONFIG_FILE), {})
    config = merge(user_layer, project_layer)
    for key in ignored:
        log.warning(
            "%s: %s is ignored: it may be set only in your own config (%s) or on the command line",
            project / CONFIG_FILE,
            key,
            user_config_dir(source) / CONFIG_FILE,
        )
    resolved_data = data_dir or Path(
        source.get("PARTWIRE_DATA_DIR") or platformdirs.user_data_dir("partwire", appauthor=False)
    )
    stored = keys.stored(resolved_data.expanduser().resolve())
    providers = configured_providers(config, source, project_layer, user_layer, stored)
    database_url = _database_url(source)
    return Settings(
        data_dir=resolved_data.expanduser().resolve(),
        project_dir=project,
        demo_delay_ms=_float_env(source, "PARTWIRE_DEMO_DELAY_MS", DEFAULT_DEMO_DELAY_MS),
        heartbeat_s=_float_env(source, "PARTWIRE_HEARTBEAT_S", DEFAULT_HEARTBEAT_S),
        event_log_retain=int(
            _float_env(source, "PARTWIRE_EVENT_LOG_RETAIN", DEFAULT_EVENT_LOG_RETAIN)
        ),
        config_watch_s=_float_env(source, "PARTWIRE_CONFIG_WATCH_S", 1.0),
        ingest_max_bytes=int(
            _float_env(source, "PARTWIRE_INGEST_MAX_BYTES", DEFAULT_INGEST_MAX_BYTES)
        ),
        default_model=source.get("PARTWIRE_MODEL") or config.get("model") or _default(providers),
        providers=providers,
        config_files=tuple(files),
        raw_config=config,
        ignored_keys=ignored,
        source_env=source,
        server_username=source.get("PARTWIRE_SERVER_USERNAME") or "partwire",
        server_password=source.get("PARTWIRE_SERVER_PASSWORD") or None,
        client_token=source.get("PARTWIRE_TOKEN") or None,
        cors_origins=_strings(user_layer, "server", "cors"),
        allowed_hosts=_strings(user_layer, "server", "hosts"),
        database_url=database_url,
        redis_url=_redis_url(source, database_url),
        budget=_budget(user_layer, project_layer),
    )


REDACTED = "[redacted]"


def _shown(value: Any) -> Any:
    """A secret as GET /config shows it: an ``{env:NAME}`` reference as written (it names
    a variable, not its value), anything else redacted."""
    return value if isinstance(value, str) and ENV_REF.fullmatch(value) else REDACTED


def shown_url(url: str) -> str:
    """A URL as routes show it: credentials in it (``http://user:pass@host``) redacted."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if not sep or "@" not in authority:
        return url
    return f"{scheme}://{REDACTED}@{authority.rpartition('@')[2]}{slash}{path}"


def redact(config: dict[str, Any]) -> dict[str, Any]:
    """The config as written, with every secret replaced (API keys, header values, the
    credentials in a base URL)."""
    result: dict[str, Any] = {}
    for key, value in config.items():
        if key == "apiKey" and isinstance(value, str):
            result[key] = _shown(value)
        elif key == "baseURL" and isinstance(value, str):
            result[key] = shown_url(value)
        elif key == "headers" and isinstance(value, dict):
            result[key] = {name: _shown(v) for name, v in value.items()}
        elif isinstance(value, dict):
            result[key] = redact(value)
        else:
            result[key] = value
    return result


def _drop_redacted(value: Any) -> Any:
    """A patch without what a client sent back as it was shown (a redacted secret, or a
    URL with its credentials redacted): the stored value stays."""
    if isinstance(value, dict):
        return {
            k: _drop_redacted(v)
            for k, v in value.items()
            if not (isinstance(v, str) and REDACTED in v)
        }
    return value


def write_project_config(settings: Settings, patch: dict[str, Any]) -> Path:
    """Merge ``patch`` into the project's partwire.json; redacted placeholders are ignored.

    The result is checked by loading it before it is written, so a bad patch
    changes nothing.
    """
    return _write_config(settings.project_dir / CONFIG_FILE, settings, patch, project=True)


def user_config_path(settings: Settings) -> Path:
    return user_config_dir(settings.source_env) / CONFIG_FILE


def read_user_config(settings: Settings) -> dict[str, Any]:
    """The user's partwire.json as written (``{}`` when there is none)."""
    path = user_config_path(settings)
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return data if isinstance(data, dict) else {}


def write_user_config(settings: Settings, patch: dict[str, Any]) -> Path:
    """``write_project_config`` for the user's own partwire.json."""
    return _write_config(user_config_path(settings), settings, patch, project=False)


def _write_config(path: Path, settings: Settings, patch: dict[str, Any], *, project: bool) -> Path:
    refused = user_only_keys(patch)
    if refused:
        raise ConfigError(
            f"{refused[0]} may be set only by editing your own partwire.json "
            f"({user_config_path(settings)}) or on the command line, not through the API"
        )
    current: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    merged = merge(current, _drop_redacted(patch))
    layers = (merged, {}) if project else ({}, merged)
    configured_providers(merged, settings.source_env, *layers)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=2) + "\n")
    return path
