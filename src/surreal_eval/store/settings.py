"""Connection settings: where the database is and who connects, read from flags or the environment."""

from __future__ import annotations

import os
from typing import Mapping

from pydantic import ConfigDict, SecretStr

from ..model_base import Model
from .defaults import DEFAULT_URL
from .urls import EMBEDDED_SCHEMES

__all__ = ["Settings", "DEFAULT_URL", "ENV_PREFIX"]

ENV_PREFIX = "SURREAL_EVAL_"


class Settings(Model):
    """Where to connect. The password is a SecretStr: it never appears in repr, str or logs."""

    model_config = ConfigDict(frozen=True)

    url: str = DEFAULT_URL
    namespace: str = "surreal_eval"
    database: str = "surreal_eval"
    user: str | None = None
    password: SecretStr | None = None
    #: sign in through this record access (e.g. `evaluator`) as account `user`, instead of as a system user
    access: str | None = None
    #: False: an embedded store on disk (surrealkv://PATH) must already exist; a missing path or an empty
    #: folder is refused in one line and nothing is made (the CLI's commands that only use a store)
    create: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> "Settings":
        """Settings from SURREAL_EVAL_URL, _NS, _DB, _USER and _PASS, with non-None overrides on top."""
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for field, key in (("url", "URL"), ("namespace", "NS"), ("database", "DB"),
                           ("user", "USER"), ("password", "PASS"), ("access", "ACCESS")):
            if env.get(ENV_PREFIX + key):
                values[field] = env[ENV_PREFIX + key]
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def is_embedded(self) -> bool:
        """True for the in-process engines (mem://, surrealkv://, file://)."""
        return self.url.split("://", 1)[0] in EMBEDDED_SCHEMES

    def describe(self) -> str:
        """Where this connects, for messages: the URL, namespace and database, never the password."""
        who = f"{self.user}@" if self.user else ""
        who = f"{self.access} {who}" if self.access else who
        return f"{who}{self.url} ({self.namespace}/{self.database})"
