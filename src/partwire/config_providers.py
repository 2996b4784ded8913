"""Providers as the configuration layers describe them, and whose keys may go where.

A project's ``partwire.json`` is not trusted (it comes with whatever was cloned): when it
points a provider at a base URL the user's own layer does not name, only a key the
project's file writes out may go there; a key from the environment, ``auth.json`` or the
user's config never does, unless the user's config lists that URL in
``trustedBaseURLs``. Secrets: only the secret fields (``options.apiKey`` and
``options.headers``) may say ``{env:NAME}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from partwire.errors import ConfigError

Api = Literal["openai", "openai-responses", "openai-compatible", "anthropic"]
APIS: tuple[Api, ...] = ("openai", "openai-responses", "openai-compatible", "anthropic")
ENV_REF = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
BUILTIN_PROVIDERS = tuple(KEY_ENV)
# opencode configs name the AI SDK package; they map onto our APIs unchanged
_NPM: dict[str, Api] = {
    "@ai-sdk/openai": "openai",
    "@ai-sdk/openai-compatible": "openai-compatible",
    "@ai-sdk/anthropic": "anthropic",
}


@dataclass(frozen=True)
class ModelConfig:
    id: str
    name: str | None = None
    context: int | None = None
    output: int | None = None
    cost: dict[str, float] | None = (
        None  # USD per million tokens: input, output, cache_read, cache_write
    )


@dataclass(frozen=True)
class ProviderConfig:
    id: str
    api: Api
    api_key: str | None = field(default=None, repr=False)  # never printed, logged or served
    base_url: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    timeout_s: float = 600.0
    models: dict[str, ModelConfig] = field(default_factory=dict)
    # why this provider may not be used (its key would go to an untrusted base URL)
    blocked: str | None = None


def _substitute(value: Any, env: dict[str, str], where: Path) -> Any:
    if isinstance(value, str):

        def lookup(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in env:
                raise ConfigError(f"{where}: {{env:{name}}} is used but {name} is not set")
            return env[name]

        return ENV_REF.sub(lookup, value)
    if isinstance(value, dict):
        return {k: _substitute(v, env, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, env, where) for v in value]
    return value


def _model(model_id: str, raw: Any) -> ModelConfig:
    raw = raw if isinstance(raw, dict) else {}
    limit = raw.get("limit") or {}
    cost = raw.get("cost")
    return ModelConfig(
        id=model_id,
        name=raw.get("name"),
        context=limit.get("context"),
        output=limit.get("output"),
        cost={k: float(v) for k, v in cost.items()} if isinstance(cost, dict) else None,
    )


@dataclass(frozen=True)
class _Trust:
    """What the user's and the project's (untrusted) layers say about a provider, and the
    base URLs the user trusts with their keys."""

    project_options: dict[str, Any] = field(default_factory=dict)
    user_options: dict[str, Any] = field(default_factory=dict)
    trusted_urls: frozenset[str] = frozenset()

    def redirected(self) -> str | None:
        """The base URL the project points this provider at, when the user did not name it
        (in their own layer or in ``trustedBaseURLs``); None when the project names none."""
        url = self.project_options.get("baseURL")
        if not url:
            return None
        named = _url_key(self.user_options.get("baseURL"))
        if _url_key(url) in self.trusted_urls or _url_key(url) == named:
            return None
        return str(url)


def _url_key(url: Any) -> str:
    return str(url or "").rstrip("/")


def _secret(value: Any, env: dict[str, str], where: str) -> Any:
    """``{env:NAME}`` substituted, in a secret field only."""
    return _substitute(value, env, Path(where)) if isinstance(value, str) else value


def _literal(value: Any) -> bool:
    """A secret written out in the project's own file (no ``{env:}``): the project's own."""
    return isinstance(value, str) and bool(value) and not ENV_REF.search(value)


@dataclass(frozen=True)
class _Credentials:
    key: str | None
    headers: dict[str, str]
    blocked: str | None = None


def _project_credentials(
    provider_id: str, url: str, trust: _Trust, users_key: bool
) -> _Credentials:
    """What a provider the project points at its own server may send there: only secrets
    the project's file writes out itself. A key or header of the user's (environment,
    auth.json, their config, an ``{env:}`` reference) never goes; the provider is blocked
    instead, with what to do."""
    options = trust.project_options
    headers = options.get("headers") or {}
    own_key = options.get("apiKey")
    # no key of its own ("" included) while the user has one: theirs would fill the gap
    borrowed = (not _literal(own_key) and (users_key or bool(own_key))) or any(
        not _literal(value) for value in headers.values()
    )
    if borrowed:
        return _Credentials(
            None,
            {},
            f"the project's partwire.json points provider {provider_id} at {url}, and the "
            "key for it would come from your environment or your own config; partwire does "
            "not send it there. If you trust that server, add "
            f'"trustedBaseURLs": ["{_url_key(url)}"] to your user partwire.json',
        )
    return _Credentials(
        own_key if _literal(own_key) else None, {str(k): str(v) for k, v in headers.items()}
    )


def _table(value: Any, where: str) -> dict[str, Any]:
    """A config object, or a ConfigError naming where it is not one."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object, not {json.dumps(value)[:40]}")
    return value


def _provider(
    provider_id: str,
    raw: dict[str, Any],
    env: dict[str, str],
    trust: _Trust | None = None,
    stored_key: str | None = None,
) -> ProviderConfig:
    raw = _table(raw, f"provider.{provider_id}")
    default_api: Api = (
        "anthropic"
        if provider_id == "anthropic"
        else ("openai" if provider_id == "openai" else "openai-compatible")
    )
    api = raw.get("api") or _NPM.get(str(raw.get("npm", "")), default_api)
    if api not in APIS:
        raise ConfigError(f"provider.{provider_id}.api is {api!r}; use one of {', '.join(APIS)}")
    where = f"provider.{provider_id}.options"
    options = _table(raw.get("options"), where)
    _table(options.get("headers"), f"{where}.headers")
    _table(raw.get("models"), f"provider.{provider_id}.models")
    trust = trust or _Trust()
    users_key = bool(
        trust.user_options.get("apiKey") or env.get(KEY_ENV.get(provider_id, "")) or stored_key
    )
    url = trust.redirected()
    if url is not None:
        found = _project_credentials(provider_id, url, trust, users_key)
    else:
        try:
            key = _secret(options.get("apiKey"), env, where)
            headers = {
                k: str(_secret(v, env, where)) for k, v in (options.get("headers") or {}).items()
            }
            found = _Credentials(
                key or env.get(KEY_ENV.get(provider_id, "")) or stored_key, headers
            )
        except ConfigError as exc:  # an unset variable breaks this provider only
            found = _Credentials(None, {}, exc.message)
    timeout = options.get("timeout")
    return ProviderConfig(
        id=provider_id,
        api=api,
        api_key=None if found.blocked else found.key,
        base_url=options.get("baseURL"),
        headers={} if found.blocked else found.headers,
        blocked=found.blocked,
        timeout_s=float(timeout) / 1000 if timeout else 600.0,
        models={mid: _model(mid, m) for mid, m in (raw.get("models") or {}).items()},
    )


def configured_providers(
    config: dict[str, Any],
    env: dict[str, str],
    project: dict[str, Any],
    user: dict[str, Any],
    stored: dict[str, str] | None = None,
) -> dict[str, ProviderConfig]:
    """The configured providers; ``stored`` holds API keys set through PUT /auth."""
    stored = stored or {}
    raw_providers = dict(config.get("provider") or {})
    for provider_id, variable in KEY_ENV.items():
        if env.get(variable) or provider_id in stored:
            raw_providers.setdefault(provider_id, {})
    trusted = frozenset(str(u).rstrip("/") for u in user.get("trustedBaseURLs") or ())
    project_providers = project.get("provider") or {}

    user_providers = user.get("provider") or {}

    def trust(pid: str) -> _Trust:
        return _Trust(
            project_options=_options(project_providers, pid),
            user_options=_options(user_providers, pid),
            trusted_urls=trusted,
        )

    return {
        pid: _provider(pid, raw or {}, env, trust(pid), stored.get(pid))
        for pid, raw in raw_providers.items()
    }


def _options(providers: Any, provider_id: str) -> dict[str, Any]:
    provider = providers.get(provider_id) if isinstance(providers, dict) else None
    options = provider.get("options") if isinstance(provider, dict) else None
    return options if isinstance(options, dict) else {}
