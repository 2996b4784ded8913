"""Settings: the only module that reads the environment or settings files."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from partwire.errors import ConfigError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4096
DEFAULT_DEMO_DELAY_MS = 25
DEFAULT_HEARTBEAT_S = 30.0
DEFAULT_EVENT_LOG_RETAIN = 200_000


@dataclass(frozen=True)
class Settings:
    """Everything configurable, resolved once at start-up."""

    data_dir: Path
    project_dir: Path
    demo_delay_ms: float = DEFAULT_DEMO_DELAY_MS
    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    event_log_retain: int = DEFAULT_EVENT_LOG_RETAIN
    default_model: str = "demo/demo"
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def database_path(self) -> Path:
        return self.data_dir / "partwire.db"


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


def load_settings(
    *,
    project_dir: Path | None = None,
    data_dir: Path | None = None,
    env: dict[str, str] | None = None,
) -> Settings:
    """Build settings from explicit arguments, then environment, then defaults."""
    source = dict(os.environ) if env is None else env
    resolved_data = data_dir or Path(
        source.get("PARTWIRE_DATA_DIR") or platformdirs.user_data_dir("partwire", appauthor=False)
    )
    return Settings(
        data_dir=resolved_data.expanduser().resolve(),
        project_dir=(project_dir or Path.cwd()).resolve(),
        demo_delay_ms=_float_env(source, "PARTWIRE_DEMO_DELAY_MS", DEFAULT_DEMO_DELAY_MS),
        heartbeat_s=_float_env(source, "PARTWIRE_HEARTBEAT_S", DEFAULT_HEARTBEAT_S),
        event_log_retain=int(
            _float_env(source, "PARTWIRE_EVENT_LOG_RETAIN", DEFAULT_EVENT_LOG_RETAIN)
        ),
        default_model=source.get("PARTWIRE_MODEL") or "demo/demo",
    )
