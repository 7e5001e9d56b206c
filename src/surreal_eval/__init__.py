"""surreal-eval: retrieval evaluation that lives inside SurrealDB."""

from .connection import Database, connect, connected
from .demo import run_demo
from .diagnose import diagnose
from .embedders import (
    Embedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    embedder_from_env,
    embedder_from_spec,
)
from .errors import (
    AuthenticationFailed,
    ConfigError,
    ConnectionFailed,
    EmbeddingFailed,
    InputError,
    NotFound,
    QueryFailed,
    Rejected,
    StoreBusy,
    SurrealEvalError,
)
from .evaluation import evaluate, load_run
from .golden import add_articles, add_questions, delete_article
from .harness import HarnessConfig, import_harness, import_seed
from .history import history
from .metrics import METRICS, RETRIEVERS, parse_ks, parse_metric
from .models import Article, Question, RunReport, RunSummary
from .settings import Settings
from .stats import (
    SMALL_SAMPLE,
    Interval,
    PairedComparison,
    confidence_interval,
    paired_test,
    question_scores,
    resolution,
    sample_warning,
)

__version__ = "0.1.0"

__all__ = [
    "Article",
    "AuthenticationFailed",
    "ConfigError",
    "ConnectionFailed",
    "Database",
    "Embedder",
    "EmbeddingFailed",
    "HarnessConfig",
    "InputError",
    "Interval",
    "METRICS",
    "NotFound",
    "OpenAIEmbedder",
    "PairedComparison",
    "Question",
    "QueryFailed",
    "RETRIEVERS",
    "Rejected",
    "RunReport",
    "RunSummary",
    "SMALL_SAMPLE",
    "SentenceTransformerEmbedder",
    "Settings",
    "StoreBusy",
    "SurrealEvalError",
    "add_articles",
    "add_questions",
    "confidence_interval",
    "connect",
    "connected",
    "delete_article",
    "diagnose",
    "embedder_from_env",
    "embedder_from_spec",
    "evaluate",
    "history",
    "import_harness",
    "import_seed",
    "load_run",
    "paired_test",
    "parse_ks",
    "parse_metric",
    "question_scores",
    "resolution",
    "run_demo",
    "sample_warning",
]
