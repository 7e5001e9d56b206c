"""`golden from-log`: a search log made into a question set with click labels (golden/from_log.py)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from .app import CorpusOpt, JsonOpt, out, plain, table_name
from .commands_golden import golden_app
from .commands_load import EmbedderOpt, _embedder, _load


class LogFormat(str, Enum):
    auto = "auto"
    jsonl = "jsonl"
    csv = "csv"


class ClickModelChoice(str, Enum):
    auto = "auto"
    pbm = "pbm"
    cascade = "cascade"
    ubm = "ubm"
    coec = "coec"


@golden_app.command("from-log")
def golden_from_log(
    path: Annotated[Path, typer.Argument(help="Search log, one impression a line: JSONL or CSV {query, shown, clicked, dwell?, session?, user?, time?}.")],
    fmt: Annotated[LogFormat, typer.Option("--format", help="File format; auto: by suffix.")] = LogFormat.auto,
    top: Annotated[int, typer.Option("--top", min=0, help="Take the N most frequent queries (the head).")] = 50,
    sample: Annotated[int, typer.Option("--sample", min=0, help="And M more drawn from the rest in proportion to their frequency (the tail).")] = 50,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the tail's draw and of auto's held-out split (the same log and seed give the same set).")] = 0,
    click_model: Annotated[ClickModelChoice, typer.Option("--click-model", help="auto: fit pbm, cascade, ubm and coec on three quarters of the "
                                                                               "log (split by --seed) and use the best on the rest; a name forces "
                                                                               "it.")] = ClickModelChoice.auto,
    min_impressions: Annotated[int, typer.Option("--min-impressions", min=1, help="A label needs the document shown for the query at least this often.")] = 3,
    min_users: Annotated[int, typer.Option("--min-users", min=1, help="... and clicked by this many distinct users (sessions, else impressions).")] = 2,
    threshold: Annotated[float, typer.Option("--threshold", min=0, help="... and relevance (the model's attractiveness over the log's mean; "
                                                                        "COEC for coec) at least this, less --margin standard errors.")] = 1.0,
    margin: Annotated[float, typer.Option("--margin", min=0, help="Standard errors a relevance must clear --threshold by (0: the estimate "
                                                                  "itself).")] = 0.5,
    min_dwell: Annotated[float, typer.Option("--min-dwell", min=0, help="A click with a dwell shorter than this many seconds does not count.")] = 5.0,
    satisfied_dwell: Annotated[float, typer.Option("--satisfied-dwell", min=0, help="A click this long (seconds) or longer is satisfied: grade 2 "
                                                                                    "when at least half a label's clicks with a dwell are; a fitted click "
                                                                                    "model labels no pair whose every click was shorter.")] = 30.0,
    unclicked_not_relevant: Annotated[bool, typer.Option("--unclicked-not-relevant", help="Judge documents shown --min-impressions times and never clicked not "
                                                                                          "relevant (default: unjudged).")] = False,
    corpus: CorpusOpt = None,
    embedder: EmbedderOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Read, check and derive, and say what would be loaded, writing nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Make a search log into questions (source click, with their frequency) and labels from clicks, all or nothing:
    `golden from-log searches.jsonl`."""
    from ..golden.click_model import ClickModel
    from ..golden.from_log import golden_from_log as from_log

    table_name(corpus, "--corpus table")
    model = ClickModel(name=click_model.value, margin=margin, min_impressions=min_impressions, min_users=min_users, threshold=threshold, min_dwell=min_dwell,
                       satisfied_dwell=satisfied_dwell, unclicked_not_relevant=unclicked_not_relevant)
    embed = _embedder(embedder)
    report = _load(lambda db, progress: from_log(db, path, format=fmt.value, top=top, sample=sample, seed=seed, model=model,
                                                 embedder=embed, label_table=corpus, progress=progress, load=not dry_run), embed)
    if as_json:
        out.print_json(report.model_dump_json())
        return
    grades = ", ".join(f"{n} of grade {g}" for g, n in report.grades.items())
    verb = "would load" if dry_run else "loaded"
    plain(out, f"read {report.impressions} impressions of {report.queries} distinct queries from {path}")
    plain(out, f"{verb} {report.questions} questions (source click): {report.head} most frequent and {report.tail} "
               f"drawn from the rest by frequency (seed {seed})")
    plain(out, f"{report.labels} labels from clicks ({grades or 'none'}) on {report.labelled} questions; "
               f"{report.unlabelled} questions have no label (ranked, left out of every mean)"
               + (f"; {report.judged_not_relevant} documents judged not relevant" if report.judged_not_relevant else ""))
    for fit in report.fits:
        plain(out, f"click model {fit.model:8} held-out log-likelihood {fit.log_likelihood:.4f} per impression, perplexity "
                   f"{fit.perplexity:.4f} ({fit.held_out_impressions} of {fit.held_out_impressions + fit.train_impressions} "
                   f"impressions held out)" + ("  <- used" if fit.model == report.click_model else ""))
    plain(out, f"labels from click model {report.click_model} ({report.chosen_by})")
    plain(out, f"a label: shown >= {min_impressions} times, clicked by >= {min_users} users, relevance less {margin:g} standard errors"
               f" >= {threshold:g} (clicks with dwell < {min_dwell:g} s not counted)")
    if report.reused_embeddings:
        plain(out, f"{report.reused_embeddings} questions took the embedding of a stored question with the same text (no --embedder)")
