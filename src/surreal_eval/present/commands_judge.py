"""`golden judge`: a chat model grades the unjudged documents of a run's top k (golden/judge.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..grammar import parse_ks
from .app import DeepestKOpt, JsonOpt, RunArg, checked, out, plain, with_db
from .commands_generate import ChatOpt, _read_prompt, chat_model
from .commands_golden import golden_app
from .deprecated import old_option, say

OLD_RUN = old_option("golden judge", "--run RUN", "RUN (positional)")


@golden_app.command("judge")
def golden_judge(
    k: DeepestKOpt,
    run: RunArg = "latest",
    old_run: Annotated[Optional[str], typer.Option("--run", hidden=True, help="0.1: now positional.")] = None,
    retriever: Annotated[Optional[list[str]], typer.Option("--retriever", help="Only the rankings of this retriever of the run (repeatable; default: "
                                                                               "all).")] = None,
    chat: ChatOpt = None,
    agreement: Annotated[int, typer.Option("--agreement", min=0, help="Also ask about this many pairs the humans judged (half relevant, half not) and print "
                                                                      "the agreement; not stored.")] = 50,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the agreement sample.")] = 0,
    prompt: Annotated[Optional[Path], typer.Option("--prompt", exists=True, dir_okay=False, help="A prompt template of yours ({question}, {title}, {passage}) "
                                                                                                 "instead of the default one.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight at once.")] = 4,
    timeout: Annotated[float, typer.Option("--timeout", min=0.001, help="Seconds to wait for one answer.")] = 60.0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ask again even when an answer to the same request is cached.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Ask a chat model to grade (0-3) the documents nobody judged in a run's top k (a k the run measured); store them as model
    judgments, apart from the human ones: `golden judge latest --k 10 --chat openai:gpt-4o-mini`."""
    import json

    if old_run is not None:
        say(*OLD_RUN)
        run = old_run
    deepest = max(checked(lambda: parse_ks(k)))
    from ..golden.judge import MODEL_RELEVANT, judge_run

    template = checked(lambda: _read_prompt(prompt)) if prompt else None
    model = chat_model(chat, concurrency=concurrency, timeout=timeout, cache=not no_cache)
    try:
        report = with_db(lambda db: judge_run(db, model, run=run, k=deepest, retrievers=retriever, agreement_pairs=agreement,
                                              seed=seed, prompt=template))
    finally:
        model.close()
    if as_json:
        out.print_json(json.dumps(report.model_dump(mode="json")))
        return
    grades = ", ".join(f"{n} graded {g}" for g, n in sorted(report.grades.items()) if n) or "none"
    plain(out, f"asked {report.model} about {report.holes} unjudged documents in the top {report.k} of {report.run} "
               f"({', '.join(report.retrievers)}) and {report.agreement_asked} judged by humans ({report.requests} requests, "
               f"the rest from the cache); prompt sha256 {report.prompt[:12]}")
    relevant = sum(n for g, n in report.grades.items() if g >= MODEL_RELEVANT)
    plain(out, f"stored {report.stored} model judgments in seval_model_judgment ({grades}; {relevant} count as relevant "
               f"on --judgments human+model)")
    if report.unparsable:
        plain(out, f"{len(report.unparsable)} answers held no grade 0-3: those pairs stay unjudged")
        for question, doc in report.unparsable[:20]:
            plain(out, f"  {question} {doc}")
    a = report.agreement
    if a.pairs:
        kappa = f"{a.kappa:.3f}" if a.kappa is not None else "undefined (both gave one answer to every pair)"
        plain(out, f"agreement with the humans on {a.pairs} pairs"
                   + (f" ({report.agreement_unparsable} answers held no grade)" if report.agreement_unparsable else "")
                   + f": Cohen's kappa {kappa}, {a.observed:.0%} the same")
        plain(out, f"  human relevant: model relevant {a.both}, model not {a.first_only}; "
                   f"human not relevant: model relevant {a.second_only}, model not {a.neither}")
    elif report.agreement_asked:
        plain(out, f"agreement: none of the {report.agreement_asked} answers held a grade")
    plain(out, "score on them with `surreal-eval evaluate --judgments human+model` (the default reads human judgments only)")
