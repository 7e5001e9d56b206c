"""Nothing from the data is read as markup: ids, labels and titles print as written in the terminal,
in error messages and in the HTML report."""

from __future__ import annotations

from typer.testing import CliRunner

from surreal_eval import Settings, connect
from surreal_eval.present.cli import app

runner = CliRunner()
MARKUP = "[bold]B[/bold] :smile: <script>x</script>"


def cli(store, *args, code=0):
    result = runner.invoke(app, ["--url", f"surrealkv://{store}", *args])
    assert result.exit_code == code, result.output
    return result.output


def markup_store(tmp_path):
    store = tmp_path / "store"
    cli(store, "init", "--demo")
    db = connect(Settings(url=f"surrealkv://{store}"))
    try:
        db.query("UPDATE article:refund_request SET title = $t RETURN NONE", {"t": MARKUP})
    finally:
        db.close()
    cli(store, "evaluate", "--k", "1,5", "--note", MARKUP)
    return store


def test_labels_titles_and_ids_print_literally_in_the_terminal_and_errors(tmp_path):
    store = markup_store(tmp_path)
    assert MARKUP in cli(store, "runs", "list")
    assert MARKUP in cli(store, "diagnose", "money_back", "--k", "10")
    assert "😄" not in cli(store, "runs", "list") + cli(store, "diagnose", "money_back", "--k", "10")
    error = cli(store, "slices", "x:smile:y[bold]z", code=2)
    assert "x:smile:y[bold]z" in error and "😄" not in error


def test_the_html_report_escapes_labels_and_titles(tmp_path):
    store = markup_store(tmp_path)
    path = tmp_path / "report.html"
    cli(store, "report", "--html", str(path))
    html = path.read_text(encoding="utf-8")
    assert "<script>x</script>" not in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html
