"""What an import does to history that an earlier version of the harness wrote in another shape."""

from __future__ import annotations

import logging

from .connection import Database
from .ownership import OWNED_TABLE

__all__ = ["OLD_RESULTS", "move_old_results"]

log = logging.getLogger(__name__)

#: Where earlier harness versions kept every metric of a ranking at one k, a row each (now eval_ranking.results).
OLD_RESULTS = "eval_result"


def move_old_results(db: Database) -> int:
    """Move the metrics a run of an earlier harness version kept in table eval_result onto its
    rankings (fn::seval::results_onto_rankings) and remove that table, when the harness made it; returns
    how many rankings were filled. A table of that name the harness did not make is left alone."""
    tables = db.value("INFO FOR DB")["tables"]
    if OLD_RESULTS not in tables:
        return 0
    owned = (db.value("RETURN record::exists(type::record('seval_object', 'table:' + $t))", {"t": OLD_RESULTS})
             if OWNED_TABLE in tables else "seval_script" in tables)
    if not owned:
        return 0
    moved = db.query("DEFINE INDEX eval_result_ranking ON eval_result FIELDS ranking; "
                     "LET $n = fn::seval::results_onto_rankings(); REMOVE TABLE eval_result; "
                     "DELETE seval_object WHERE name = $t OR string::starts_with(name, $t + '.'); RETURN $n;",
                     {"t": OLD_RESULTS})[-1]
    log.info("moved the results of %s rankings from %s onto seval_ranking.results", moved, OLD_RESULTS)
    return moved
