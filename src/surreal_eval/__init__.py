"""surreal-eval: retrieval evaluation that lives inside SurrealDB."""

from .connection import Database, connect, connected
from .demo import run_demo
from .diagnose import diagnose
from .errors import (
    AuthenticationFailed,
    ConfigError,
    ConnectionFailed,
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

__version__ = "0.1.0"

__all__ = [
    "Article",
    "AuthenticationFailed",
    "ConfigError",
    "ConnectionFailed",
    "Database",
    "HarnessConfig",
    "InputError",
    "METRICS",
    "NotFound",
    "Question",
    "QueryFailed",
    "RETRIEVERS",
    "Rejected",
    "RunReport",
    "RunSummary",
    "Settings",
    "StoreBusy",
    "SurrealEvalError",
    "add_articles",
    "add_questions",
    "connect",
    "connected",
    "delete_article",
    "diagnose",
    "evaluate",
    "history",
    "import_harness",
    "import_seed",
    "load_run",
    "parse_ks",
    "parse_metric",
    "run_demo",
]
