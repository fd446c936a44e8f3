"""CSV renderer: one table of the view (its ``csv_table``, else the first), raw values; text cells
starting with = + - @ tab or CR are neutralised with a leading ' (OWASP CSV injection)."""

from __future__ import annotations

import csv
import io

from ..fmt import csv_cell, none_if_nan
from ..views import View


def _cell(v: object) -> object:
    if v is None or (isinstance(v, float) and none_if_nan(v) is None):
        return ""
    if isinstance(v, float):
        return repr(v)
    return csv_cell(v)  # text a spreadsheet would run as a formula gets a leading '



def render_csv(view: View) -> str:
    """CSV text of the view's rows (``csv_records``: the JSON contract's keys as the header) or,
    failing that, of its main table (full precision; empty cell for null)."""
    if view.csv_records is not None:
        return _records_csv(view.csv_records)
    tables = view.tables()
    if not tables:
        return ""
    chosen = next((t for t in tables if t.title == view.csv_table), tables[0])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([csv_cell(c) for c in chosen.columns])
    for row in chosen.rows:
        w.writerow([_cell(v) for v in row])
    return buf.getvalue()


def _records_csv(records: tuple[dict[str, object], ...]) -> str:
    header: list[str] = list(dict.fromkeys(k for r in records for k in r))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in records:
        w.writerow([_cell(r.get(k)) for k in header])
    return buf.getvalue()
