"""A mistyped --url is one line that says what is wrong, the forms accepted and the URL probably meant
(ConfigError, exit 2), from the CLI and from connect(); nothing is created on disk (issue 26, 3)."""

from __future__ import annotations

import sys

import pytest

from surreal_eval import ConfigError, Settings, connect
from surreal_eval.present.cli import run_cli
from surreal_eval.store.urls import ACCEPTED

#: (what the user typed, what the refusal must say); {dir} is a fresh folder's absolute path.
CASES = [
    ("surrealkv:{dir}/store", "did you mean surrealkv://{dir}/store?"),  # one slash: surrealkv:/abs/path
    ("surrealkv:store", "did you mean surrealkv://store?"),
    ("{dir}/store", "is a path, not a URL; did you mean surrealkv://{dir}/store?"),
    ("postgres://localhost:5432/db", "has a scheme SurrealDB does not speak (postgres://)"),
    ("rocksdb://{dir}/store", "only a SurrealDB server opens"),
    ("SURREALKV://{dir}/store", "did you mean surrealkv://{dir}/store?"),
    ("surrealkv://", "names no folder"),
    ("ws:/localhost:8000", "did you mean ws://localhost:8000?"),
    ("localhost:8000", "did you mean ws://localhost:8000 (a server)"),
    ("ws://", "names no host"),
    ("mem:", "did you mean mem://?"),
    ("http://localhost:99999", "Port out of range"),
    ("ws://[::1", "Invalid IPv6 URL"),
]


def filled(text: str, folder) -> str:
    return text.replace("{dir}", str(folder))


@pytest.mark.parametrize(("typed", "says"), CASES, ids=[c[0] for c in CASES])
def test_a_mistyped_url_is_refused_in_one_line_naming_the_accepted_forms(typed, says, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)  # `surrealkv://` and relative paths would land here
    url = filled(typed, folder)
    code = run_cli(["--url", url, "runs", "list"])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --url ")
    assert filled(says, folder) in lines[0] and ACCEPTED in lines[0]
    assert "install" not in lines[0]  # the embedded engine is installed here
    with pytest.raises(ConfigError) as refused:
        connect(Settings(url=url))
    assert refused.value.exit_code == 2 and str(refused.value) == lines[0].removeprefix("error: ")
    assert list(folder.iterdir()) == []  # nothing made on disk


def test_the_embedded_engine_missing_is_said_only_for_an_embedded_url(monkeypatch):
    monkeypatch.setitem(sys.modules, "surrealdb.connections.async_embedded", None)  # its import now fails
    with pytest.raises(ConfigError, match=r"needs the SDK's embedded engine, which is not installed: pip install 'surrealdb\[embedded\]'"):
        connect(Settings(url="mem://"))
    with pytest.raises(ConfigError) as refused:
        connect(Settings(url="postgres://localhost/db"))
    assert "install" not in str(refused.value)


@pytest.mark.parametrize("url", ["mem://", "memory", "surrealkv://{dir}/new", "file://{dir}/new", "surrealkv+versioned://{dir}/new"])
def test_every_accepted_embedded_form_opens(url, tmp_path):
    db = connect(Settings(url=filled(url, tmp_path)))
    try:
        assert db.value("RETURN 1 + 1") == 2
    finally:
        db.close()


def test_a_store_that_must_exist_is_refused_when_missing_and_nothing_is_made(tmp_path):
    """Settings(create=False), what every CLI command but init and the loads opens with (issue 35, 4)."""
    cases = ((tmp_path / "a" / "b" / "x.db", f"({tmp_path / 'a'}, the folder it would be in, does not exist)"),
             (tmp_path / "x.db", f"({tmp_path / 'x.db'} does not exist)"))
    for folder, says in cases:
        with pytest.raises(ConfigError, match="no store at") as refused:
            connect(Settings(url=f"surrealkv://{folder}", create=False))
        assert refused.value.exit_code == 2 and says in str(refused.value)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"\(an empty folder\)"):
        connect(Settings(url=f"surrealkv://{tmp_path / 'empty'}", create=False))
    assert list((tmp_path / "empty").iterdir()) == []
    connect(Settings(url=f"surrealkv://{tmp_path / 'made'}")).close()  # the library's default makes one
    db = connect(Settings(url=f"surrealkv://{tmp_path / 'made'}", create=False))  # which then opens
    try:
        assert db.value("RETURN 1 + 1") == 2 and db.new_store is None
    finally:
        db.close()


def test_the_store_a_failed_command_made_is_removed_and_only_it(tmp_path):
    db = connect(Settings(url=f"surrealkv://{tmp_path / 'a' / 'b' / 'x.db'}"))
    made = db.new_store
    db.close()
    assert made is not None and made.root == tmp_path / "a" and not made.keep_root
    made.remove()
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "empty").mkdir()
    db = connect(Settings(url=f"surrealkv://{tmp_path / 'empty'}"))
    made = db.new_store
    db.close()
    made.remove()
    assert [p.name for p in tmp_path.iterdir()] == ["empty"] and list((tmp_path / "empty").iterdir()) == []
