"""Real collections that ship with the repository (tests/data/), unpacked on first use."""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
UNPACKED = DATA / ".unpacked"


@cache
def cisi() -> Path:
    """The CISI collection in BEIR layout with its embeddings, unpacked from tests/data/cisi.tar.xz."""
    folder = UNPACKED / "cisi"
    if not (folder / "qrels" / "test.tsv").is_file():
        UNPACKED.mkdir(exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=UNPACKED, prefix="cisi."))  # two test processes may race
        with tarfile.open(DATA / "cisi.tar.xz") as archive:
            archive.extractall(partial, filter="data")
        try:
            (partial / "cisi").rename(folder)
        except OSError:  # the other process was first: its copy is the same
            pass
        shutil.rmtree(partial, ignore_errors=True)
    return folder
