"""surreal-eval: retrieval evaluation that lives inside SurrealDB."""

from .store.connection import Database
from .store.opening import connect, connected
from .runs.demo import run_demo
from .runs.diagnose import diagnose
from .load.embedders import (
    Embedder,
    OpenAIEmbedder,
    embedder_from_env,
    embedder_from_spec,
)
from .load.embedder_local import SentenceTransformerEmbedder
from .errors import (
    AuthenticationFailed,
    ConfigError,
    ConnectionFailed,
    EmbeddingFailed,
    InputError,
    NotComparable,
    NotFound,
    QueryFailed,
    Rejected,
    StoreBusy,
    SurrealEvalError,
)
from .analysis.compare import Comparison, RetrieverComparison, compare_reports, compare_retrievers, compare_runs
from .runs.evaluate import evaluate
from .runs.record import load_run, resolve_run
from .analysis.gate import GateResult, gate
from .present.junit import write_junit
from .load.records import add_articles, add_questions, delete_article
from .store.schema import HarnessConfig, import_harness, import_seed
from .load.bulk import DatasetReport, LoadReport, load_beir, load_corpus, load_dataset, load_golden, recover_loads
from .load.attach import AttachReport, attach_table
from .load.readers import read_beir, read_documents, read_qrels, read_questions
from .runs.history import history
from .present.html import write_report
from .analysis.slices import Slice, slices
from .grammar import METRICS, parse_ks, parse_metric
from .store.registry import HARNESS_RETRIEVERS as RETRIEVERS, Retriever, registry
from .models import Article, Question, RunReport, RunSummary
from .store.settings import Settings
from .stats import (
    SMALL_SAMPLE,
    Interval,
    PairedComparison,
    confidence_interval,
    confidence_intervals,
    paired_test,
    question_scores,
    resolution,
    sample_warning,
)

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
    "attach_table",
    "AttachReport",
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
