"""Title requests (partwire.session.titles) in the mock providers: answered aside, so a
test's script and its list of requests hold only the conversation's own calls."""

from __future__ import annotations

import json
from typing import Any

from partwire.session.titles import TITLE_SYSTEM

MOCK_TITLE = "Mock title"


def is_title_request(body: dict[str, Any]) -> bool:
    """Whether the request carries the title instruction, wherever the API puts it."""
    return TITLE_SYSTEM[:40] in json.dumps(body, ensure_ascii=False)
