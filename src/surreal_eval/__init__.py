"""surreal-eval: retrieval evaluation that lives inside SurrealDB.

The names below are imported when first used (PEP 562), so `import surreal_eval` and the CLI's
start stay fast: numpy, scipy and the SDK load only for what needs them.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import (
    AuthenticationFailed,
    ConfigError,
    ConnectionFailed,
    EmbeddingFailed,
    InputError,
    NotComparable,
    NotFound,
    PermissionDenied,
    QueryFailed,
    Rejected,
    StoreBusy,
    SurrealEvalError,
)

#: Public name -> the module that defines it.
_LAZY = {
    "Database": ".store.connection",
    "connect": ".store.opening",
    "connected": ".store.opening",
    "run_demo": ".runs.demo",
    "diagnose": ".runs.diagnose",
    "Embedder": ".load.embedders",
    "OpenAIEmbedder": ".load.embedders",
    "embedder_from_env": ".load.embedders",
    "embedder_from_spec": ".load.embedders",
    "SentenceTransformerEmbedder": ".load.embedder_local",
    "Comparison": ".analysis.compare",
    "RetrieverComparison": ".analysis.compare",
    "compare_reports": ".analysis.compare",
    "compare_retrievers": ".analysis.compare",
    "compare_runs": ".analysis.compare",
    "evaluate": ".runs.evaluate",
    "load_run": ".runs.record",
    "resolve_run": ".runs.record",
    "GateResult": ".analysis.gate",
    "gate": ".analysis.gate",
    "write_junit": ".present.junit",
    "add_articles": ".load.records",
    "add_questions": ".load.records",
    "delete_article": ".load.records",
    "HarnessConfig": ".store.schema",
    "import_harness": ".store.schema",
    "import_seed": ".store.schema",
    "DatasetReport": ".load.bulk",
    "LoadReport": ".load.bulk",
    "load_beir": ".load.bulk",
    "load_corpus": ".load.bulk",
    "load_dataset": ".load.bulk",
    "load_golden": ".load.bulk",
    "recover_loads": ".load.bulk",
    "read_beir": ".load.readers",
    "read_documents": ".load.readers",
    "read_qrels": ".load.readers",
    "read_questions": ".load.readers",
    "history": ".runs.history",
    "write_report": ".present.html",
    "Slice": ".analysis.slices",
    "slices": ".analysis.slices",
    "METRICS": ".grammar",
    "RETRIEVERS": ".store.registry:HARNESS_RETRIEVERS",
    "Retriever": ".store.registry",
    "registry": ".store.registry",
    "parse_ks": ".grammar",
    "parse_metric": ".grammar",
    "Article": ".models",
    "Question": ".models",
    "RunReport": ".models",
    "RunSummary": ".models",
    "Settings": ".store.settings",
    "SMALL_SAMPLE": ".stats",
    "Interval": ".stats",
    "PairedComparison": ".stats",
    "confidence_interval": ".stats",
    "confidence_intervals": ".stats",
    "paired_test": ".stats",
    "question_scores": ".stats",
    "resolution": ".stats",
    "sample_warning": ".stats",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'surreal_eval' has no attribute {name!r}")
    module, _, attribute = module.partition(":")
    value = getattr(importlib.import_module(module, __name__), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__version__ = "0.1.0"

__all__ = [
    "Article",
    "AuthenticationFailed",
    "Comparison",
    "ConfigError",
    "ConnectionFailed",
    "Database",
    "DatasetReport",
    "Embedder",
    "EmbeddingFailed",
    "GateResult",
    "HarnessConfig",
    "InputError",
    "Interval",
    "LoadReport",
    "METRICS",
    "NotComparable",
    "NotFound",
    "PermissionDenied",
    "OpenAIEmbedder",
    "PairedComparison",
    "QueryFailed",
    "Question",
    "RETRIEVERS",
    "Rejected",
    "Retriever",
    "RetrieverComparison",
    "RunReport",
    "RunSummary",
    "SMALL_SAMPLE",
    "SentenceTransformerEmbedder",
    "Settings",
    "Slice",
    "StoreBusy",
    "SurrealEvalError",
    "add_articles",
    "add_questions",
    "compare_reports",
    "compare_retrievers",
    "compare_runs",
    "confidence_interval",
    "confidence_intervals",
    "connect",
    "connected",
    "delete_article",
    "diagnose",
    "embedder_from_env",
    "embedder_from_spec",
    "evaluate",
    "gate",
    "history",
    "import_harness",
    "import_seed",
    "load_beir",
    "load_corpus",
    "load_dataset",
    "load_golden",
    "load_run",
    "paired_test",
    "parse_ks",
    "parse_metric",
    "question_scores",
    "read_beir",
    "read_documents",
    "read_qrels",
    "read_questions",
    "recover_loads",
    "registry",
    "resolution",
    "resolve_run",
    "run_demo",
    "sample_warning",
    "slices",
    "write_junit",
    "write_report",
]
