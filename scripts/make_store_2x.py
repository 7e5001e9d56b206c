"""Write tests/data/store_2x.tar.xz: a store on disk written by SurrealDB's 2.x engine, as the surrealdb 1.0.8
Python SDK writes it (its binary names surrealdb-core-2.3.10). That is the SDK langchain-surrealdb 0.2.1 pins
(surrealdb~=1.0.8); the surrealdb 2.0.0 SDK embeds the same core and writes the same format. The harness's 3.x engine cannot
open such a store (tests/test_foreign_store.py). Run it with that SDK, in a throwaway environment:

    python -m venv /tmp/venv2x && /tmp/venv2x/bin/pip install surrealdb==1.0.8
    /tmp/venv2x/bin/python scripts/make_store_2x.py

It writes three documents the way langchain-surrealdb's vector store does (table `documents`, fields
text, vector, metadata) into the folder store_2x and packs it as tests/data/store_2x.tar.xz.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from pathlib import Path

from surrealdb import Surreal

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
DOCUMENTS = [
    ("refunds", "Refunds reach your card within five working days.", [0.9, 0.1, 0.0, 0.1], {"page": 1}),
    ("delivery", "Parcels arrive in two to four days; the tracking link comes by email.", [0.0, 0.1, 0.95, 0.1], {"page": 2}),
    ("account", "Turn on two-step verification under Account settings.", [0.05, 0.85, 0.0, 0.3], {"page": 3}),
]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "store_2x"
        db = Surreal(f"surrealkv://{folder}")
        db.use("langchain", "database")
        for key, text, vector, metadata in DOCUMENTS:
            db.query("UPSERT type::thing('documents', $key) CONTENT { text: $text, vector: $vector, metadata: $metadata }",
                     {"key": key, "text": text, "vector": vector, "metadata": metadata})
        print("engine:", db.version(), "rows:", db.query("SELECT count() FROM documents GROUP ALL"))
        db.close()
        with tarfile.open(DATA / "store_2x.tar.xz", "w:xz") as archive:
            archive.add(folder, arcname="store_2x")
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
