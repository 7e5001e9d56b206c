"""Which statement texts may be run again after a write conflict: one the engine says can be retried,
and only when the text is one transaction (a single statement, or one BEGIN ... COMMIT): in a text of
several transactions, those before the conflict were applied, and running it again would apply them twice."""

from __future__ import annotations

import re

from surrealdb.errors import SurrealError

__all__ = ["retryable", "one_transaction"]


def retryable(error: BaseException) -> bool:
    """A write conflict between two transactions, which the engine says can be retried."""
    return isinstance(error, SurrealError) and "can be retried" in str(error)


def one_transaction(sql: str) -> bool:
    """Whether `sql` runs as one transaction: a single statement (no `;` outside quotes, comments and
    blocks but a last one), or one `BEGIN ... COMMIT` around everything. Only such a text is run
    again after a write conflict: in a text of several transactions, those before the conflict
    were applied and must not be applied twice."""
    text = re.sub(r"--[^\n]*", "", sql).strip()  # (a `--` inside a string only makes a retry less likely)
    if text.upper().startswith("BEGIN") and text.rstrip(";").rstrip().upper().endswith(("COMMIT", "COMMIT TRANSACTION")):
        return True
    depth, quote, ends, i = 0, "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        elif ch == ";" and depth == 0 and text[i + 1:].strip():
            ends += 1
        i += 1
    return ends == 0
