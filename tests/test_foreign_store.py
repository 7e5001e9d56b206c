"""A folder the harness must not open as its store is refused in one line and left exactly as it was
(issue 26, 4): a store written by SurrealDB's 2.x engine (tests/data/store_2x.tar.xz, written by the
surrealdb 1.0.8 SDK that langchain-surrealdb pins: scripts/make_store_2x.py), a folder of other files,
a file. The 2.x store is the real thing: the 3.x engine fails on its manifest after making LOCK, sstables/,
vlog/ and wal/ in it, and only those are removed again."""

from __future__ import annotations

import tarfile
from importlib import metadata
from pathlib import Path

import pytest

from surreal_eval import ConfigError, Settings, connect
from surreal_eval.present.cli import run_cli

STORE_2X = Path(__file__).parent / "data" / "store_2x.tar.xz"


def contents(folder: Path) -> dict[str, tuple[bytes, int] | None]:
    """Every path under `folder` with its bytes and modification time (None for a folder)."""
    return {str(p.relative_to(folder)): None if p.is_dir() else (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


@pytest.fixture
def store_2x(tmp_path) -> Path:
    with tarfile.open(STORE_2X) as archive:
        archive.extractall(tmp_path, filter="data")
    return tmp_path / "store_2x"


def refusal(url: str, capsys, command: str = "runs list") -> str:
    code = run_cli(["--url", url, *command.split()])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    return lines[0]


def test_the_shipped_store_is_the_2x_engines_format():
    with tarfile.open(STORE_2X) as archive:
        names = archive.getnames()
        manifest = archive.extractfile("store_2x/manifest/00000000000000000000.manifest").read()
    assert "store_2x/clog/00000000000000000000.clog" in names  # the 2.x engine's commit log; 3.x has wal/
    assert manifest[:2] == b"\x00\x00"  # format version 0; the 3.x engine reads version 1 only


@pytest.mark.parametrize("command", ["runs list", "init"])
def test_a_store_of_the_2x_engine_is_refused_in_one_line_and_left_as_it_was(store_2x, capsys, command):
    before = contents(store_2x)
    line = refusal(f"surrealkv://{store_2x}", capsys, command)
    assert "is a store written by another version of SurrealDB's engine" in line
    assert "Unsupported manifest format version: 0" in line
    assert f"surrealdb-embedded {metadata.version('surrealdb-embedded')}" in line  # the SDK this harness runs
    assert "mid-statement" not in line
    assert contents(store_2x) == before  # no LOCK, sstables/, vlog/ or wal/ left behind
    with pytest.raises(ConfigError, match="another version of SurrealDB's engine"):
        connect(Settings(url=f"surrealkv://{store_2x}"))
    assert contents(store_2x) == before


def test_what_the_folder_held_before_the_failed_open_is_kept_even_where_the_engine_writes(store_2x, capsys):
    (store_2x / "LOCK").write_bytes(b"")  # what an earlier release's failed open left: kept as it was
    (store_2x / "wal").mkdir()
    (store_2x / "wal" / "notes.txt").write_text("mine\n")
    before = contents(store_2x)
    refusal(f"surrealkv://{store_2x}", capsys)
    assert contents(store_2x) == before


def test_a_folder_of_other_files_is_refused_and_left_untouched(tmp_path, capsys):
    folder = tmp_path / "papers"
    (folder / "drafts").mkdir(parents=True)
    (folder / "notes.txt").write_text("not a store\n")
    before = contents(folder)
    line = refusal(f"surrealkv://{folder}", capsys, "init")
    assert f"{folder} holds other files (drafts, notes.txt) and no SurrealDB store" in line
    assert contents(folder) == before


def test_a_file_named_as_the_store_is_refused_and_left_untouched(tmp_path, capsys):
    path = tmp_path / "store.db"
    path.write_text("a file\n")
    line = refusal(f"surrealkv://{path}", capsys, "init")
    assert f"{path} is a file, not a store's folder" in line
    assert path.read_text() == "a file\n" and sorted(p.name for p in tmp_path.iterdir()) == ["store.db"]


def test_an_empty_folder_becomes_a_store(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    db = connect(Settings(url=f"surrealkv://{folder}"))
    try:
        db.query("CREATE note:one SET text = 'kept'")
    finally:
        db.close()
    db = connect(Settings(url=f"surrealkv://{folder}"))
    try:
        assert db.value("RETURN note:one.text") == "kept"
    finally:
        db.close()
