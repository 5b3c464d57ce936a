"""The HTML pieces every report page shares (:mod:`.report` for grid stores,
:mod:`.search_report` for search stores): the style sheet, the click-to-sort script,
table cells to 4 significant digits, tables and figure captions."""

from __future__ import annotations

import html

import numpy as np

__all__ = ["CSS", "SORT_JS", "caption", "fmt_number", "html_table"]

CSS = """body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:12px}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right;white-space:nowrap}
th{background:#eee;cursor:pointer} th.sorted-asc::after{content:" ▲"}
th.sorted-desc::after{content:" ▼"} td.text,th.text{text-align:left}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:12px}
.scroll{overflow-x:auto;max-width:100%} figure{margin:1em 0}
figcaption{font-size:13px;color:#444;max-width:900px}
img{max-width:100%;border:1px solid #ddd;margin:.3em 0} .failed{color:#b00}
.note{font-size:13px;color:#555}"""

# sorts a table on a click of its header: numbers by value (data-v), text by text
SORT_JS = """document.querySelectorAll("table.sortable").forEach(function(t){
 t.querySelectorAll("th").forEach(function(th,i){th.addEventListener("click",function(){
  var rows=Array.from(t.querySelectorAll("tr")).slice(1);
  var asc=!th.classList.contains("sorted-asc");
  t.querySelectorAll("th").forEach(function(h){h.classList.remove("sorted-asc","sorted-desc")});
  th.classList.add(asc?"sorted-asc":"sorted-desc");
  function key(r){var c=r.children[i];var v=c.getAttribute("data-v");
   return v===null?c.textContent:(v==="nan"?Infinity:parseFloat(v));}
  rows.sort(function(a,b){var x=key(a),y=key(b);
   var c=(typeof x==="number"&&typeof y==="number")?x-y:String(x).localeCompare(String(y));
   return asc?c:-c;});
  rows.forEach(function(r){t.appendChild(r)});});});});"""

def fmt_number(x) -> str:
    """A table cell: 4 significant digits."""
    if isinstance(x, bool | np.bool_):
        return str(bool(x))
    if isinstance(x, int | np.integer):
        return str(int(x))
    if isinstance(x, float | np.floating):
        return "nan" if not np.isfinite(x) else f"{float(x):.4g}"
    return str(x)


def html_table(df, attrs: dict[str, str] | None = None, sortable: bool = True) -> str:
    """A DataFrame as an HTML table; ``attrs`` become attributes of <table>. Numeric cells
    carry their full value in ``data-v`` (sorting, tests), and show 4 significant digits."""
    attrs = dict(attrs or {})
    if sortable:
        attrs["class"] = (attrs.get("class", "") + " sortable").strip()
    at = "".join(f' {k}="{html.escape(v)}"' for k, v in attrs.items())
    numeric = {c: df[c].dtype.kind in "fiu" for c in df.columns}
    text_th = '<th class="text">'
    head = "".join(
        f"{'<th>' if numeric[c] else text_th}{html.escape(str(c))}</th>" for c in df.columns
    )
    rows = []
    for r in df.itertuples(index=False):
        cells = []
        for c, v in zip(df.columns, r, strict=True):
            if numeric[c]:
                full = "nan" if not np.isfinite(float(v)) else repr(float(v))
                cells.append(f'<td data-v="{full}">{html.escape(fmt_number(v))}</td>')
            else:
                cls = "text failed" if c == "status" and v != "ok" else "text"
                cells.append(f'<td class="{cls}">{html.escape(fmt_number(v))}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f'<div class="scroll"><table{at}><tr>{head}</tr>' + "".join(rows) + "</table></div>"


def caption(text: str) -> str:
    """A figure caption (escaped)."""
    return f"<figcaption>{html.escape(text)}</figcaption>"


