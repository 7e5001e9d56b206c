"""Where the run after an ingest spends its time, question by question, measured inside the engine.

    python benchmarks/after_ingest_steps.py [--dataset cisi|debian] [--questions N] [--documents 20] [--sample N]

benchmarks/watch_scale.py measures the whole run after a 20-document ingest against a fresh one; this one
splits the per-question part of it into its steps, on the same set and the same ingest: the store as
watch_scale builds it (the set loaded, watch on at k 1, 3, 5, 10, one evaluation made), the application's
ingest written, the run started (its changes read), then each step of every question (or the first --sample)
timed once by the engine's own clock in one query a question (`time::now()` before and after each step), its
inputs bound by `LET` first: no SDK round trip or parameter encoding is counted (timed from Python, one call a
round trip, a step with an embedding among its parameters read 3 to 7 ms too high). Nothing is written: the
run's candidate lists are read, merged in memory and not stored. The lists are brought up to date as the run
does it, with the corpus changes read once and given (fn::seval::evaluate_questions reads them once a call).

Printed per step: the mean milliseconds a question, the fastest question's, and the mean's share of the sum of
the four whole steps (the kept BM25 and vector lists brought up to date, the fused rankings, the scoring of
every ranking). Earlier versions printed the fastest of 4 questions, repeated 40 times: about half the mean.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import watch_scale  # noqa: E402 (benchmarks/ is on the path from here)

#: what every step reads, bound once per question: the run's parameters (lists not stored), its ranking
#: configurations, the question, its candidate lists, labels and kept cache rows, and the corpus changes
BOUND = """
LET $p0 = object::extend($run.params, { cache: fn::seval::run_cache($run), ks: $run.ks });
LET $p = object::extend($p0, { cache: object::extend($p0.cache, { store: false }) });
LET $configs = fn::seval::ranking_configs($p, fn::seval::run_entries($run.retrievers, $p));
LET $q = fn::seval::golden_rows(fn::seval::run_golden($p), NONE, [$question])[0];
LET $lists = fn::seval::candidates($q, $p, $configs);
LET $target = fn::seval::question_target($q, $p.corpus);
LET $labels = fn::seval::label_profile($target.judged, $target.gains, $p.ks, $p.relevance_level);
LET $ch = fn::seval::run_changes($run);
LET $b = $ch.bm25;
LET $row = SELECT key, depth, hits, version, bound, stats FROM ONLY type::record('seval_candidate_cache', [$q.id, 'bm25', <string> $p.corpus, 0]);
LET $vrow = SELECT key, depth, hits, version, bound, stats FROM ONLY type::record('seval_candidate_cache', [$q.id, 'vector', <string> $p.corpus, 0]);
LET $stats = IF $row.stats = NONE { fn::seval::bm25_list_stats($row.hits, $q, $b.analyzer, <string> $p.corpus) } ELSE { $row.stats };
LET $srow = object::extend($row, { stats: $stats });
LET $fused = $configs.map(|$c| fn::seval::fused($c, $lists));
LET $ks = $p.ks;
"""

#: (name, expression, whole): the steps of one question; the `whole` ones add up to its per-question work
STEPS = [
    ("kept BM25 list brought up to date", "fn::seval::cached_list('bm25', $q, $p, $ch)", True),
    ("  its statistics read from the state (first merge)", "fn::seval::bm25_list_stats($row.hits, $q, $b.analyzer, <string> $p.corpus)", False),
    ("  the merge, statistics given", "fn::seval::merged_bm25_list($srow, $q, $b, <string> $p.corpus, $p.depth, [])", False),
    ("  the corpus changes read from the run (once a call)", "fn::seval::run_changes($run)", False),
    ("kept vector list brought up to date", "fn::seval::cached_list('vector', $q, $p, $ch)", True),
    ("  the merge", "fn::seval::merged_vector_list($vrow, $q, $ch, $p.depth)", False),
    ("every fused ranking (sweep included)", "$configs.map(|$c| fn::seval::fused($c, $lists))", True),
    ("every ranking scored at every k", "$fused.map(|$l| fn::seval::standard_scores($l.id, $labels, $ks))", True),
]


def timed(db, run, questions: list) -> list[list[float]]:
    """The milliseconds each step of STEPS took for each of `questions`, one evaluation each, in one query a question."""
    sql = BOUND + "LET $t0 = time::now();"
    for i, (_, expression, _) in enumerate(STEPS):
        sql += f" LET $x{i} = {expression}; LET $t{i + 1} = time::now();"
    sql += " RETURN [" + ", ".join(f"duration::nanos($t{i + 1} - $t{i})" for i in range(len(STEPS))) + "];"
    return [[nanos / 1e6 for nanos in db.query(sql, {"run": run, "question": question})[-1]] for question in questions]


def measure(dataset: str, questions: int, documents: int, sample: int | None) -> list[tuple[str, float, float, bool]]:
    """(step, mean ms a question, the fastest question's ms, whether it is one of the whole steps) for each of STEPS."""
    with watch_scale.watched_store(dataset, questions, documents, "steps") as (db, batches):
        watch_scale._write(db, batches[0])
        started = db.value("RETURN fn::seval::start_run($ks, $names, $given, $label)",
                           {"ks": watch_scale.KS, "names": db.value("RETURN fn::seval::default_retrievers()"),
                            "given": {"engine": db.engine_version()}, "label": None})
        rows = timed(db, started["run"], started["questions"][:sample])
        return [(name, statistics.mean(r[i] for r in rows), min(r[i] for r in rows), whole)
                for i, (name, _, whole) in enumerate(STEPS)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="cisi", choices=["cisi", "debian"])
    parser.add_argument("--questions", type=int, default=None, help="default: 76 on CISI, 500 on Debian")
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--sample", type=int, default=None, help="time only the first N questions (default: every one)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    questions = args.questions or (76 if args.dataset == "cisi" else 500)
    steps = measure(args.dataset, questions, args.documents, args.sample)
    total = sum(ms for _, ms, _, whole in steps if whole)
    print(f"\n{args.dataset}: one question's work in the run after a {args.documents}-document ingest "
          f"(mean over {min(args.sample or questions, questions)} questions, each step once; the fastest question's beside it)")
    for name, ms, fastest, whole in steps:
        print(f"  {name:52s} {ms:7.2f} ms  (fastest {fastest:6.2f})" + (f"   {ms / total:5.1%} of {total:.1f} ms" if whole else ""))
    if args.json:
        args.json.write_text(json.dumps([{"step": n, "ms": ms, "fastest": f, "whole": w} for n, ms, f, w in steps], indent=2))
    os._exit(0)  # the embedded engine may abort at interpreter exit (docs/exit-codes.md)


if __name__ == "__main__":
    main()
