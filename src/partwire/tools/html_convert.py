"""HTML → markdown or text for webfetch. Self-contained (no partwire imports), so a large
page can be converted by running this file in a child process: the conversion is pure
Python that would otherwise hold the interpreter, and every live stream, for seconds.

    python html_convert.py markdown|text < page.html > page.md
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bs4 import BeautifulSoup


def _clean(html: str) -> BeautifulSoup:
    from bs4 import BeautifulSoup  # imported on first use: it is large, and rarely needed

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    return soup


def convert(html: str, fmt: str) -> str:
    """The page as markdown (ATX headings) or as text, scripts and styles removed."""
    soup = _clean(html)
    if fmt == "text":
        text = soup.get_text("\n")
        return "\n".join(line.strip() for line in text.splitlines() if line.strip())
    from markdownify import MarkdownConverter

    markdown: str = MarkdownConverter(heading_style="ATX").convert_soup(soup)
    return re.sub(r"\n{3,}", "\n\n", markdown).strip()


if __name__ == "__main__":
    sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    sys.stdout.write(convert(sys.stdin.buffer.read().decode("utf-8"), sys.argv[1]))
