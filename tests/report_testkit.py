"""Reading a report page in tests: its tables (cell texts and full values), images and
links, with html.parser."""

from __future__ import annotations

from html.parser import HTMLParser


class Page(HTMLParser):
    """Tables (attrs, rows of cell texts), image sources and links of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[dict, list[list[str]]]] = []
        self.values: list[tuple[dict, list[list[str | None]]]] = []  # data-v of each cell
        self.images: list[str] = []
        self.links: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append((a, []))
            self.values.append((a, []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append([])
            self.values[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = []
            self.values[-1][1][-1].append(a.get("data-v"))
        elif tag == "img":
            self.images.append(a["src"])
        elif tag in ("link", "script") and (a.get("href") or a.get("src")):
            self.links.append(a.get("href") or a.get("src"))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
