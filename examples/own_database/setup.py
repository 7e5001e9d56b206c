"""Stand-in for your application: creates its database (app.surql and documents.jsonl) in STORE.

    python setup.py [STORE]     (default surrealkv://own.db)
"""

import json
import sys
from pathlib import Path

from surrealdb import Surreal

HERE = Path(__file__).parent


def main(url: str) -> None:
    db = Surreal(url)
    db.use("surreal_eval", "surreal_eval")  # the harness's default namespace and database
    db.query((HERE / "app.surql").read_text(encoding="utf-8")).execute()
    rows = [json.loads(line) for line in (HERE / "documents.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        db.query("CREATE type::record('kb', $id) CONTENT $row", {"id": row.pop("id"), "row": row}).execute()
    db.close()
    print(f"created table kb ({len(rows)} records), analyzer kb_words, indexes kb_body and kb_vec, fn::kb_search in {url}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "surrealkv://own.db")
