"""`golden judge`: a chat model grades the unjudged documents of a run's top k (golden/judge.py); `golden agreement`: how far
its judgments agree with a person's and whether they change which retriever ranks first (golden/agreement.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..grammar import parse_ks
from .app import DeepestKOpt, JsonOpt, OptionalKsOpt, RunArg, checked, err, fail, out, plain, with_db
from .commands_generate import ChatOpt, _read_prompt, chat_model
from .commands_golden import golden_app
from .deprecated import old_option, say
from .writing import write_lines

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
    seed: Annotated[int, typer.Option("--seed", help="Seed of the agreement sample, the calibration draw and the intervals.")] = 0,
    calibrate: Annotated[int, typer.Option("--calibrate", min=0, help="Then draw this many pairs the model judged in the top k (stratified by "
                                                                      "its grade) for a person to label; `golden agreement` measures them.")] = 0,
    calibrate_file: Annotated[Optional[Path], typer.Option("--calibrate-file", dir_okay=False, help="Write the drawn pairs to this JSONL file "
                                                                                                    "(it must not exist), to grade and read "
                                                                                                    "back with `golden label --from-file`.")] = None,
    prompt: Annotated[Optional[Path], typer.Option("--prompt", exists=True, dir_okay=False, help="A prompt template of yours ({question}, {title}, {passage}) "
                                                                                                 "instead of the default one.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight at once.")] = 4,
    timeout: Annotated[float, typer.Option("--timeout", min=0.001, help="Seconds to wait for one answer.")] = 60.0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ask again even when an answer to the same request is cached.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Ask a chat model to grade (0-3) the documents nobody judged in a run's top k (a k the run measured); store them as model
    judgments, apart from the human ones; print how the run's retrievers order with them: `golden judge latest --k 10 --chat
    openai:gpt-4o-mini --calibrate 40 --calibrate-file calibrate.jsonl`."""
    import json

    from ..errors import ConfigError

    if old_run is not None:
        say(*OLD_RUN)
        run = old_run
    deepest = max(checked(lambda: parse_ks(k)))
    if calibrate_file is not None and not calibrate:
        fail(ConfigError("--calibrate-file goes with --calibrate N"))
    if calibrate_file is not None and calibrate_file.exists():
        fail(ConfigError(f"{calibrate_file} exists: grade it and read it with `golden label --from-file {calibrate_file}`, or name another file"))
    from ..golden.judge import judge_run

    template = checked(lambda: _read_prompt(prompt)) if prompt else None
    model = chat_model(chat, concurrency=concurrency, timeout=timeout, cache=not no_cache)
    try:
        report = with_db(lambda db: judge_run(db, model, run=run, k=deepest, retrievers=retriever, agreement_pairs=agreement,
                                              seed=seed, prompt=template, calibrate=calibrate))
    finally:
        model.close()
    if calibrate_file is not None:
        from ..golden.agreement import calibration_lines

        checked(lambda: write_lines(calibration_lines(report.calibration), calibrate_file))
    if as_json:
        out.print_json(json.dumps(report.model_dump(mode="json")))
        return
    grades = ", ".join(f"{n} graded {g}" for g, n in sorted(report.grades.items()) if n) or "none"
    plain(out, f"asked {report.model} about {report.holes} unjudged documents in the top {report.k} of {report.run} "
               f"({', '.join(report.retrievers)}) and {report.agreement_asked} judged by humans ({report.requests} requests, "
               f"the rest from the cache); prompt sha256 {report.prompt[:12]}")
    plain(out, f"stored {report.stored} model judgments in seval_model_judgment ({grades}; {report.relevant} count as relevant "
               f"on --judgments human+model)")
    if report.unparsable:
        plain(out, f"{len(report.unparsable)} answers held no grade 0-3: those pairs stay unjudged")
        for question, doc in report.unparsable[:20]:
            plain(out, f"  {question} {doc}")
    a = report.agreement
    if a.pairs:
        plain(out, f"agreement with the humans on a sample of {a.pairs} pairs they judged"
                   + (f" ({report.agreement_unparsable} answers held no grade)" if report.agreement_unparsable else "")
                   + f": Cohen's kappa {a.kappa.text()}" + (f", {a.observed:.0%} the same" if a.kappa.measurable else ""))
        if a.kappa.measurable:
            plain(out, f"  human relevant: model relevant {a.both}, model not {a.first_only}; "
                       f"human not relevant: model relevant {a.second_only}, model not {a.neither}")
    elif report.agreement_asked:
        plain(out, f"agreement: none of the {report.agreement_asked} answers held a grade")
    show_orderings(report.orderings)
    if report.calibration:
        show_calibration(report.calibration, calibrate_file)
    elif calibrate:
        plain(out, f"--calibrate {calibrate}: nothing to draw: the model judged no pair of the top {report.k} that no human has judged")
    plain(out, "score on them with `surreal-eval evaluate --judgments human+model` (the default reads human judgments only)")


def show_orderings(orderings) -> None:  # type: ignore[no-untyped-def]
    """The retrievers' orderings under human and human+model judgments: Kendall's tau per metric, and the warnings."""
    if len(orderings.retrievers) < 2:
        found = orderings.metrics[0].tau.text() if orderings.metrics else "not measurable: no question was scored"
        plain(out, f"Kendall's tau between the retrievers' orderings on human and on human+model judgments: {found}")
        return
    plain(out, f"retrievers of {orderings.run} ordered on human judgments and on human+model ({orderings.model_judgments} model "
               f"judgments merged) over {orderings.questions} questions, at k = {orderings.k}:")
    for m in orderings.metrics:
        means = ", ".join(f"{name} {m.first[name]:.3f} -> {m.second[name]:.3f}" for name in sorted(m.first, key=lambda n: -m.first[n]))
        plain(out, f"  {m.metric}: Kendall's tau {m.tau.text()}; {means}")
    for warning in orderings.warnings:
        plain(err, f"warning: {warning}")


def show_calibration(pairs, path) -> None:  # type: ignore[no-untyped-def]
    """The pairs drawn for a person to label, and how to label them."""
    by_grade = Counter(p.model_grade for p in pairs)
    plain(out, f"drew {len(pairs)} pairs the model judged for a person to label (model grades {', '.join(f'{g}: {n}' for g, n in sorted(by_grade.items()))}"
               f"); grade 0 not relevant, 1 answers part of it, 2 answers it")
    if path is not None:
        plain(out, f"  wrote them to {path}: fill in each \"grade\", then `surreal-eval golden label --from-file {path}` and `surreal-eval golden "
                   "agreement`")
        return
    for p in pairs:
        plain(out, f"  surreal-eval golden label {p.question} {p.doc} --grade G   (or --not)")
    plain(out, "  then `surreal-eval golden agreement`")



@golden_app.command("agreement")
def golden_agreement(
    run: RunArg = "latest",
    k: OptionalKsOpt = None,
    retriever: Annotated[Optional[list[str]], typer.Option("--retriever", help="Only this retriever of the run (repeatable; default: all).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap intervals.")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """How far the model's judgments agree with a person's, on the pairs both judged (Cohen's and quadratic-weighted kappa, each
    with its interval), and whether they change how the run's retrievers order (Kendall's tau per metric at the deepest k):
    `golden agreement latest --k 10`."""
    import json

    from ..golden.agreement import measure_agreement

    deepest = max(checked(lambda: parse_ks(k))) if k else None
    report = with_db(lambda db: measure_agreement(db, run=run, k=deepest, retrievers=retriever, seed=seed))
    if as_json:
        out.print_json(json.dumps(report.model_dump(mode="json")))
        return
    a = report.agreement
    plain(out, f"{a.n} pairs of {report.golden} judged by a person and by the model ({report.model_judgments} model judgments in all); "
               "grades on the golden set's scale: 0 not relevant, a model's 2 or 3 a label of 1 or 2")
    plain(out, f"  Cohen's kappa on grades: {a.kappa.text()}")
    plain(out, f"  quadratic-weighted kappa: {a.weighted_kappa.text()}")
    plain(out, f"  relevant or not: Cohen's kappa {report.relevant.kappa.text()}")
    if a.n:
        plain(out, f"  the same grade on {a.observed:.0%}; confusion (rows the person's grade, columns the model's):")
        plain(out, "    " + " " * 8 + "".join(f"{g:>8g}" for g in a.grades))
        for g, row in zip(a.grades, a.confusion):
            plain(out, f"    {g:>8g}" + "".join(f"{c:>8d}" for c in row))
    show_orderings(report.orderings)
