"""`golden generate`: questions a chat model writes about sampled records of a corpus (golden/generate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import CorpusOpt, JsonOpt, checked, out, plain, table_name, with_db
from .commands_golden import golden_app
from .commands_load import EmbedderOpt, _embedder

ChatOpt = Annotated[Optional[str], typer.Option(
    "--chat", envvar="SURREAL_EVAL_CHAT", help="The chat model: openai:MODEL@BASE_URL (its key in SURREAL_EVAL_CHAT_KEY).")]


def chat_model(spec: Optional[str], *, concurrency: int, timeout: float, cache: bool):
    """The chat model a --chat spec names, caching answers under the user's cache folder unless `cache` is False."""
    from ..errors import ConfigError
    from ..golden.chat import ChatCache, chat_from_spec, default_cache_dir

    def build():
        if not spec:
            raise ConfigError("no chat model: give --chat openai:MODEL@BASE_URL or set SURREAL_EVAL_CHAT")
        return chat_from_spec(spec, cache=ChatCache(default_cache_dir() / "chat") if cache else None,
                              concurrency=concurrency, timeout=timeout)

    return checked(build)


#: The five figures of the overlap summary, as --json names them.
QUARTILE_NAMES = ("min", "q1", "median", "q3", "max")


def quartile_values(values: list[float]) -> dict[str, float]:
    """min, first quartile, median, third quartile and max of `values` (linear interpolation)."""
    import numpy as np

    return dict(zip(QUARTILE_NAMES, (float(x) for x in np.quantile(values, [0, 0.25, 0.5, 0.75, 1])), strict=True))


def quartiles(values: list[float]) -> str:
    """min / first quartile / median / third quartile / max of `values` (linear interpolation)."""
    return " / ".join(f"{x:.2f}" for x in quartile_values(values).values())


def report_json(report) -> dict:
    """The report as --json prints it: its fields, and the overlap summary the text prints (`overlap_quartiles`; null
    with `overlap_quartiles_note` when no question was read)."""
    data = report.model_dump(mode="json")
    data["overlap_quartiles"] = quartile_values(report.overlaps) if report.overlaps else None
    data["overlap_quartiles_note"] = None if report.overlaps else "no question was read: no overlap with a passage to summarise"
    return data


@golden_app.command("generate")
def golden_generate(
    count: Annotated[int, typer.Option("--count", min=1, help="How many records to ask about (one question each).")],
    chat: ChatOpt = None,
    embedder: EmbedderOpt = None,
    corpus: CorpusOpt = None,
    stratify: Annotated[Optional[str], typer.Option("--stratify", help="Sample evenly across the values of this field (e.g. metadata.topic); default: across "
                                                                       "length quartiles.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sample.")] = 0,
    prompt: Annotated[Optional[Path], typer.Option("--prompt", exists=True, dir_okay=False, help="A prompt template of yours ({title}, {passage}, {language}) "
                                                                                                 "instead of the default one.")] = None,
    language: Annotated[str, typer.Option("--language", help="The language to ask for (en is also checked).")] = "en",
    max_overlap: Annotated[Optional[float], typer.Option("--max-overlap", min=0, max=1, help="Drop a question whose share of content words found in its "
                                                                                             "passage is above this (a copy).")] = None,
    flag_overlap: Annotated[bool, typer.Option("--flag-overlap", help="Keep the questions above --max-overlap, flagged, instead of dropping them.")] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight at once.")] = 4,
    timeout: Annotated[float, typer.Option("--timeout", min=0.001, help="Seconds to wait for one answer.")] = 60.0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ask again even when an answer to the same request is cached.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Ask a chat model for questions about sampled records and store them as synthetic questions, each labelled with its record:
    `golden generate --count 50 --chat openai:gpt-4o-mini`."""
    import json

    from ..golden.generate import generate_questions

    table_name(corpus, "corpus table")
    template = checked(lambda: _read_prompt(prompt)) if prompt else None
    model = chat_model(chat, concurrency=concurrency, timeout=timeout, cache=not no_cache)
    vectors = _embedder(embedder)
    try:
        report = with_db(lambda db: generate_questions(
            db, model, vectors, count=count, seed=seed, corpus=corpus, stratify=stratify, prompt=template,
            language=language, max_overlap=max_overlap, flag_overlap=flag_overlap))
    finally:
        model.close()
        close = getattr(vectors, "close", None)
        if callable(close):
            close()
    if as_json:
        out.print_json(json.dumps(report_json(report)))
        return
    dropped = ", ".join(f"{n} {why}" for why, n in report.dropped.items() if n) or "none"
    plain(out, f"asked {report.model} about {report.asked} of {report.available} records of {report.corpus} "
               f"({report.requests} requests, the rest from the cache); prompt sha256 {report.prompt[:12]}")
    plain(out, f"stored {report.stored} synthetic questions in seval_question"
               + (f" ({report.flagged} flagged above --max-overlap)" if report.flagged else "") + f"; dropped: {dropped}")
    if report.overlaps:
        plain(out, f"overlap with the passage (share of content words), min / q1 / median / q3 / max: {quartiles(report.overlaps)}")


def _read_prompt(path: Path) -> str:
    from ..errors import InputError

    try:
        return path.read_text(encoding="utf-8-sig")  # a byte order mark at the start is skipped
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the prompt: {error}", source=str(path)) from None
