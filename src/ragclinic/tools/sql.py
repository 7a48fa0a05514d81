"""The `sql` tool: one read-only SELECT over the tables found at ingest (store/tables.py), checked before it runs.

The query is parsed with sqlglot (SQLite dialect): exactly one statement, a SELECT (UNION of SELECTs, WITH
allowed), no DDL or DML, no PRAGMA / ATTACH, and only the tables the caller may see (their documents in the
question's scope — a tenant's key never reaches another tenant's table). It runs on a read-only connection with
a row limit and a time limit. The output names the tables (and so the documents) the numbers came from, for
the answer's citations.

A question can steer the model's SQL, and the tool's errors reach the trace, so a query that names a table outside
the allowed ones gets the same answer whether that table exists or not (issue 32): SQLite's "not authorized" and "no
such table" read alike, and a WITH name may not look like a stored table's name (``t_<doc>_<n>``) at all.
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from ragclinic.tools.calculator import ToolError

MAX_ROWS = 200
MAX_SECONDS = 2.0
# what reads beyond the listed tables or touches the file system (extension loading is also off in sqlite3)
_FORBIDDEN_FUNC = re.compile(r"^(pragma_|sqlite_|load_extension$|readfile$|writefile$|edit$|fts3_tokenizer$|zipfile)")
_TABLE_LIKE = re.compile(r"^t_[0-9a-z]*_\d+$")  # store/tables.py's table_name(): the only names that vary by document

DESCRIPTION = ("sql: one SQLite SELECT over the tables found in the documents (CSV/TSV files and the tables in "
               "PDF, DOCX, HTML, Markdown pages). Input: the query, e.g. \"SELECT name, cost * quantity AS "
               "amount FROM t_ab12_0 ORDER BY amount DESC LIMIT 1\" or \"SELECT SUM(score) FROM t_ab12_0 WHERE "
               "team = 'Blue'\"; the tables and their columns (with types) are listed for you. Output: the columns and "
               "up to 200 rows, and the tables used.")


@dataclass(frozen=True)
class SqlResult:
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]
    tables: tuple[str, ...]  # the tables the query read (for citations)
    truncated: bool
    seconds: float


def _cte_names(query: str) -> set[str]:
    import sqlglot  # on use: sqlglot, needed only when the SQL tool runs
    from sqlglot import exp  # on use: sqlglot, needed only when the SQL tool runs

    return {c.alias_or_name.lower() for c in sqlglot.parse_one(query, read="sqlite").find_all(exp.CTE)}


def _authorizer(allowed: set[str]):
    ok_read = {t.lower() for t in allowed}

    def decide(action, arg1, arg2, _db, _trigger):
        if action == sqlite3.SQLITE_SELECT:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ:  # arg1: the table or WITH name read
            return sqlite3.SQLITE_OK if (arg1 or "").lower() in ok_read else sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            return sqlite3.SQLITE_DENY if _FORBIDDEN_FUNC.match((arg2 or "").lower()) else sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_RECURSIVE:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY  # anything that is not reading: PRAGMA, ATTACH, writes, ...

    return decide


def check(query: str, allowed: set[str]) -> tuple[str, ...]:
    """The tables a SELECT reads; ToolError naming what is not allowed otherwise."""
    import sqlglot  # on use: sqlglot, needed only when the SQL tool runs
    from sqlglot import exp  # on use: sqlglot, needed only when the SQL tool runs

    if not query or not query.strip():
        raise ToolError("sql: give one SELECT query")
    try:
        statements = [s for s in sqlglot.parse(query, read="sqlite") if s is not None]
    except sqlglot.errors.SqlglotError as e:  # ParseError, TokenError (an unclosed quote), ...
        raise ToolError(f"sql: cannot parse the query ({(str(e).splitlines() or [''])[0]}); write one SQLite "
                        "SELECT") from None
    if len(statements) != 1:
        raise ToolError(f"sql: exactly one statement, not {len(statements)}")
    tree = statements[0]
    if not isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except)):
        raise ToolError(f"sql: only SELECT queries run here, not {tree.key.upper()}")
    forbidden = (exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Alter, exp.Command, exp.Pragma,
                 exp.Attach, exp.Detach)
    bad = next((n for n in tree.walk() if isinstance(n, forbidden)), None)
    if bad is not None:
        raise ToolError(f"sql: {bad.key.upper()} is not allowed; only reading SELECTs")
    for t in tree.find_all(exp.Table):  # a table-valued function (pragma_table_info(...), json_each(...)) in FROM
        if not isinstance(t.this, exp.Identifier):
            raise ToolError("sql: only the listed tables may be read, not a table-valued function")
    for f in tree.find_all(exp.Func):
        name = (f.name if isinstance(f, exp.Anonymous) else f.sql_name()).lower()
        if _FORBIDDEN_FUNC.match(name):
            raise ToolError(f"sql: the function {name}() is not allowed")
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    used = tuple(sorted({t.name for t in tree.find_all(exp.Table) if t.name and t.name not in ctes}))
    unknown = [t for t in used if t not in allowed]
    if unknown:
        raise ToolError(f"sql: no table {', '.join(unknown)} here; the tables you may query: "
                        f"{', '.join(sorted(allowed)) or '(none)'}")
    if not used:
        raise ToolError("sql: the query reads no table; use the calculator for plain arithmetic")
    return used


def run_sql(db_path: Path, query: str, allowed: set[str], *, max_rows: int = MAX_ROWS,
            max_seconds: float = MAX_SECONDS) -> SqlResult:
    used = check(query, allowed)
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    real = {n.lower() for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    ctes = _cte_names(query)
    # a WITH name shadowing a stored table would let the authorizer pass reads of that table; refusing every
    # table-like name (stored or not) keeps the refusal from telling which tables exist
    shadow = {c for c in ctes - {t.lower() for t in allowed} if c in real or _TABLE_LIKE.match(c)}
    if shadow:
        conn.close()
        raise ToolError(f"sql: a WITH name may not be the name of a stored table or look like one (t_…_N): "
                        f"{', '.join(sorted(shadow))}")
    # SQLite itself refuses what the parse check might miss: reading any table but the allowed ones and the
    # query's own WITH names (`x IN chunks`, ...), and any function on the forbidden list
    conn.set_authorizer(_authorizer(allowed | ctes))
    deadline = time.monotonic() + max_seconds
    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
    t0 = time.perf_counter()
    try:
        cur = conn.execute(query)
        rows = cur.fetchmany(max_rows + 1)
        columns = tuple(d[0] for d in cur.description or ())
    except sqlite3.DatabaseError as e:
        if "not authorized" in str(e) or "prohibited" in str(e) or "no such table" in str(e):
            raise ToolError(f"sql: the query reads beyond the tables you may query ({', '.join(sorted(allowed))})") from None
        if "interrupted" in str(e):
            raise ToolError(f"sql: the query ran past {max_seconds:g} s; aggregate or add a LIMIT") from None
        raise ToolError(f"sql: {e}") from None
    finally:
        conn.close()
    return SqlResult(columns, tuple(tuple(r) for r in rows[:max_rows]), used, len(rows) > max_rows,
                     round(time.perf_counter() - t0, 4))
