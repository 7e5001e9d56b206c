"""Write one database of a SurrealDB store as a SurrealQL export: its definitions, then every row.

    python scripts/export_store.py URL NS DB > store.surql

Made for the test store of a previous release (tests/data/release_0_1.surql): the rows are written
as the engine renders them (`<string>` of the rows), read back with `OPTION IMPORT` (no events fire,
as `surreal import` does). Definitions come from INFO FOR DB and INFO FOR TABLE, in an order that
applies: analyzers, functions, params, tables with their fields, the rows, then indexes, events and
accesses.
"""

from __future__ import annotations

import os
import sys

from surrealdb import Surreal


def export(url: str, ns: str, name: str) -> str:
    db = Surreal(url)
    db.use(ns, name)
    value = lambda q, v=None: db.query(q, v).first()  # noqa: E731
    info = value("INFO FOR DB")
    out = ["-- a SurrealQL export of " + f"{ns}/{name}", "OPTION IMPORT;"]
    database = value("INFO FOR NS")["databases"][name]
    if database.endswith(" STRICT"):
        out.append(database.replace("DEFINE DATABASE ", "DEFINE DATABASE OVERWRITE ", 1) + ";")
    for kind in ("analyzers", "functions", "params"):
        out += [info[kind][k] + ";" for k in sorted(info[kind])]
    tables = sorted(info["tables"])
    later = []
    for table in tables:
        out.append(info["tables"][table] + ";")
        ti = value("INFO FOR TABLE $t", {"t": table})
        out += [ti["fields"][f] + ";" for f in sorted(ti["fields"], key=lambda f: (f.count("."), f))]
        later += [ti[k][n] + ";" for k in ("indexes", "events") for n in sorted(ti[k])]
    for table in tables:
        rows = value("RETURN (SELECT * FROM type::table($t) ORDER BY id).map(|$r| <string> $r)", {"t": table})
        if rows:
            out.append(f"INSERT INTO {table} [\n" + ",\n".join(rows) + "\n];")
    out += later
    out += [info["accesses"][a] + ";" for a in sorted(info["accesses"])]
    db.close()
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(export(*sys.argv[1:4]))
    sys.stdout.flush()
    os._exit(0)
