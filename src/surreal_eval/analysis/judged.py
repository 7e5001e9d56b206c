"""judged@k between two runs: a comparison is unfair when one run's top k holds far fewer judged
documents than the other's, since an unjudged document counts as non-relevant (trec_eval's rule).

    judged_warnings(a, b, retrievers, ks, questions)  one line per retriever and k whose mean judged@k
                                                       differs by more than JUDGED_GAP

Where the judgments are positive only (every judged document relevant: all of BEIR, click labels, generated
questions), judged@k is precision@k, and a gap in it is the regression itself, not a want of judgments: no line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..models import QuestionResult

__all__ = ["JUDGED_GAP", "judged_warnings"]

#: The largest difference of mean judged@k (a share of the top k) two compared runs may have
#: before compare warns: 0.1 is one judged document in ten.
JUDGED_GAP = 0.1

Index = Mapping[tuple[str, int], Mapping[str, QuestionResult]]


def _mean_judged(rows: Mapping[str, QuestionResult], questions: Sequence[str]) -> float | None:
    values = [rows[q].scores.get("judged") for q in questions if q in rows]
    if not values or any(v is None for v in values):
        return None  # a run recorded before judged@k existed
    return sum(values) / len(values)


def _judged_non_relevant(rows: Mapping[str, QuestionResult], questions: Sequence[str]) -> bool:
    """Whether a top k of `rows` holds a document judged non-relevant (judged@k above precision@k)."""
    return any((rows[q].scores.get("judged") or 0.0) - (rows[q].scores.get("precision") or 0.0) > 1e-9 for q in questions if q in rows)


def judged_warnings(a: Index, b: Index, retrievers: Sequence[str], ks: Sequence[int], questions: Sequence[str]) -> list[str]:
    """A line for each retriever and k whose mean judged@k over `questions` differs between runs A
    and B by more than JUDGED_GAP (none when a run has no judged@k, and none when neither top k holds a document
    judged non-relevant: judged@k is then precision@k, and its gap the regression itself)."""
    lines = []
    for retriever in retrievers:
        for k in ks:
            rows_a, rows_b = a.get((retriever, k), {}), b.get((retriever, k), {})
            if not (_judged_non_relevant(rows_a, questions) or _judged_non_relevant(rows_b, questions)):
                continue
            mean_a, mean_b = _mean_judged(rows_a, questions), _mean_judged(rows_b, questions)
            if mean_a is None or mean_b is None or abs(mean_a - mean_b) <= JUDGED_GAP:
                continue
            fewer = "A" if mean_a < mean_b else "B"
            lines.append(f"{retriever} judged@{k} is {mean_a:.3f} in A and {mean_b:.3f} in B: unjudged results count "
                         f"as non-relevant, so run {fewer} may score lower for want of judgments, not of relevance")
    return lines
