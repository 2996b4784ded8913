"""Where partwire's logs go: a rotating file in the data dir, or standard error with
``--print-logs`` (opencode's flag names). Records are written by a background thread,
so logging never blocks the event loop."""

from __future__ import annotations

import atexit
import logging
import logging.handlers
import queue
import sys
from pathlib import Path

LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_FILE = "partwire.log"
MAX_BYTES = 5 * 1024 * 1024
BACKUPS = 3

_listener: logging.handlers.QueueListener | None = None


def _target(print_logs: bool, log_dir: Path) -> logging.Handler:
    if print_logs:
        return logging.StreamHandler(sys.stderr)
    log_dir.mkdir(parents=True, exist_ok=True)
    return logging.handlers.RotatingFileHandler(
        log_dir / LOG_FILE, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
    )


def setup(level: str, print_logs: bool, log_dir: Path) -> None:
    """Send the ``partwire`` loggers at ``level`` and above to their place."""
    global _listener
    stop()
    target = _target(print_logs, log_dir)
    target.setFormatter(logging.Formatter(FORMAT))
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    root = logging.getLogger("partwire")
    root.handlers = [logging.handlers.QueueHandler(records)]
    root.setLevel("WARNING" if level == "WARN" else level)
    root.propagate = False
    _listener = logging.handlers.QueueListener(records, target)
    _listener.start()
    atexit.register(stop)


def stop() -> None:
    """Write what is queued and close the target."""
    global _listener
    if _listener is not None:
        _listener.stop()
        for handler in _listener.handlers:
            handler.close()
        _listener = None
