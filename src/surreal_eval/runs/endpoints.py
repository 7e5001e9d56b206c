"""Live search endpoints as retrievers (`http:NAME`): registered once (table seval_endpoint,
surql/endpoints.surql), called for every question of a run over HTTP (runs/http_calls.py), and what
they return scored as supplied rankings, beside the database's own retrievers.

The question's text and k are always sent as data: URL-encoded query parameter values of a GET, or
JSON values of a POST body; a template may hold {text} and {k} nowhere else. The ids are read from
the JSON answer with a JMESPath expression (`hits[*].id`); each must name a record of the corpus table.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import jmespath
from jmespath.exceptions import JMESPathError

from ..model_base import Model
from ..errors import ConfigError, EndpointFailed, InputError, NotFound, PermissionDenied
from ..store.connection import Database, record_str, to_record
from ..store.schema import identifier
from .http_calls import Call, Service, call_all
from .supplied import Hit, missing_records

__all__ = ["PREFIX", "Endpoint", "add_endpoint", "endpoints", "remove_endpoint", "split_endpoints", "endpoint_rankings"]

#: How a run names an endpoint's rankings, and how `--retriever` asks for one.
PREFIX = "http:"
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_BARE_K = re.compile(r'(?<!")\{k\}(?!")')
_OWNERS_ONLY = "only an owner (a system user) may register or remove endpoints: an evaluator may evaluate them"


class Endpoint(Model):
    """One registered search endpoint."""

    name: str
    url: str
    post: str | None = None
    ids: str
    scores: str | None = None
    timeout: float = 10.0
    concurrency: int = 4
    retries: int = 3


def _placeholders(text: str, where: str) -> set[str]:
    found = set(_PLACEHOLDER.findall(text))
    unknown = sorted(found - {"text", "k"})
    if unknown:
        raise ConfigError(f"{where} holds {{{unknown[0]}}}: only {{text}} and {{k}} are filled in")
    return found


def _fill(template: str, text: str, k: int) -> str:
    """`template` with {text} and {k} filled in one pass (a text holding "{k}" stays as it is)."""
    return _PLACEHOLDER.sub(lambda m: text if m[1] == "text" else str(k), template)


def _url_parts(url: str) -> tuple[str, list[tuple[str, str]]]:
    """The URL without its query, and its query parameters (templates); placeholders elsewhere are refused."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"--search-url {url!r} must be an http:// or https:// URL")
    for piece in (parts.netloc, parts.path, parts.fragment):
        if _placeholders(piece, "--search-url"):
            raise ConfigError("--search-url may hold {text} and {k} only as query parameter values, e.g. ?q={text}&k={k}")
    query = parse_qsl(parts.query, keep_blank_values=True)
    for key, value in query:
        if _placeholders(key, "--search-url"):
            raise ConfigError("--search-url may hold {text} and {k} only as query parameter values, e.g. ?q={text}&k={k}")
        _placeholders(value, "--search-url")
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), query


def _body(template: str) -> Any:
    """The POST body template as JSON (a bare {k} read as "{k}"), refused unless it is a JSON object."""
    try:
        body = json.loads(_BARE_K.sub('"{k}"', template))
    except json.JSONDecodeError as error:
        raise ConfigError(f"--post is not JSON ({error.msg} at character {error.pos}), e.g. "
                          '\'{"query": "{text}", "k": {k}}\'') from None
    if not isinstance(body, dict):
        raise ConfigError("--post must be a JSON object, e.g. '{\"query\": \"{text}\", \"k\": {k}}'")
    return body


def _filled_body(value: Any, text: str, k: int) -> Any:
    """The body template `value` with every string "{k}" made the number k and {text}, {k} filled in strings."""
    if isinstance(value, dict):
        return {key: _filled_body(item, text, k) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled_body(item, text, k) for item in value]
    if value == "{k}":
        return k
    return _fill(value, text, k) if isinstance(value, str) else value


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return [value] if isinstance(value, str) else []


def checked_endpoint(endpoint: Endpoint) -> Endpoint:
    """`endpoint` with its name, URL, body and JMESPath expressions checked, else a ConfigError saying which."""
    identifier(endpoint.name, what="endpoint name")
    _, query = _url_parts(endpoint.url)
    sent = [v for _, v in query]
    if endpoint.post is not None:
        sent = _strings(_body(endpoint.post))
        for text in sent:
            _placeholders(text, "--post")
    if not any("{text}" in s for s in sent):
        raise ConfigError("the question's text is never sent: put {text} in a query value of --search-url "
                          "(?q={text}) or in a string of --post")
    for option, expression in (("--ids", endpoint.ids), ("--scores", endpoint.scores)):
        if expression is not None:
            try:
                jmespath.compile(expression)
            except JMESPathError as error:
                raise ConfigError(f"{option} {expression!r} is not a JMESPath expression: {str(error).splitlines()[0]}") from None
    for option, value, low, high in (("--timeout", endpoint.timeout, 0, 600), ("--concurrency", endpoint.concurrency, 1, 64),
                                     ("--retries", endpoint.retries, 0, 10)):
        if not low <= value <= high or (option == "--timeout" and value == 0):
            raise ConfigError(f"{option} must be {'above' if option == '--timeout' else 'at least'} {low} and at most {high}, got {value}")
    return endpoint


def add_endpoint(db: Database, endpoint: Endpoint) -> Endpoint:
    """Register `endpoint` (checked first); a name already registered is refused."""
    endpoint = checked_endpoint(endpoint)
    if db.value("RETURN fn::seval::is_endpoint($name)", {"name": endpoint.name}):
        raise InputError(f"endpoint {endpoint.name} is already registered: `surreal-eval endpoint remove {endpoint.name}` first")
    created = db.value("RETURN fn::seval::add_endpoint($name, $row)",
                       {"name": endpoint.name, "row": endpoint.model_dump(exclude={"name"}, exclude_none=True)})
    if not created:  # the table's permissions let a record user (an evaluator) create nothing, silently
        raise PermissionDenied(_OWNERS_ONLY)
    return endpoint


def endpoints(db: Database) -> list[Endpoint]:
    """Every registered endpoint, in name order."""
    rows = db.value("RETURN fn::seval::endpoints()")
    return [Endpoint(**{k: v for k, v in row.items() if v is not None}) for row in rows]


def remove_endpoint(db: Database, name: str) -> None:
    """Unregister endpoint `name` (runs that evaluated it keep their rankings)."""
    if not db.value("RETURN fn::seval::is_endpoint($name)", {"name": name}):
        raise NotFound(f"no endpoint {name}: `surreal-eval endpoint list` lists them")
    if not db.value("RETURN fn::seval::remove_endpoint($name)", {"name": name}):
        raise PermissionDenied(_OWNERS_ONLY)


def split_endpoints(db: Database, names: list[str] | None) -> tuple[list[str] | None, list[str]]:
    """`names` (comma-separated or repeated) split into registry retrievers and endpoints: `http:NAME`,
    or a bare NAME that is a registered endpoint and no registry retriever. None stays None."""
    if not names:
        return names, []
    wanted = [n.strip() for name in names for n in name.split(",") if n.strip()]
    if not any(n.startswith(PREFIX) for n in wanted) and not db.value("RETURN fn::seval::any_endpoint()"):
        return names, []
    registered = set(db.value("RETURN fn::seval::endpoint_names()"))
    retrievers = set(db.value("RETURN fn::seval::retriever_names()"))
    listed = [n.removeprefix(PREFIX) for n in wanted if n.startswith(PREFIX) or (n in registered and n not in retrievers)]
    unknown = sorted(set(listed) - registered)
    if unknown:
        raise ConfigError(f"no endpoint {unknown[0]}: register it with `surreal-eval endpoint add {unknown[0]} --search-url ... "
                          f"--ids ...`; registered: {', '.join(sorted(registered)) or 'none'}")
    rest = [n for n in wanted if not n.startswith(PREFIX) and n not in listed]
    return rest, list(dict.fromkeys(listed))


def _call(endpoint: Endpoint, question: dict[str, Any], k: int) -> Call:
    about = record_str(question["id"])
    if endpoint.post is not None:
        return Call(about, "POST", endpoint.url, body=_filled_body(_body(endpoint.post), question["text"], k))
    base, query = _url_parts(endpoint.url)
    return Call(about, "GET", base, params=[(key, _fill(value, question["text"], k)) for key, value in query])


def _ranking(endpoint: Endpoint, answer: Any, about: str) -> tuple[list[str], list[float]]:
    """The ids and scores of one answer, read with the endpoint's JMESPath expressions."""
    what = f"endpoint {endpoint.name}"
    ids = jmespath.search(endpoint.ids, answer)
    if not isinstance(ids, list) or not all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids):
        raise EndpointFailed(f"{what}: --ids {endpoint.ids!r} found no list of ids in the answer for {about}"
                             f" (found {type(ids).__name__})")
    ids = [str(i) for i in ids]
    if len(set(ids)) != len(ids):
        raise EndpointFailed(f"{what} ranked one id twice for {about}: {next(i for i in ids if ids.count(i) > 1)!r}")
    if endpoint.scores is None:
        return ids, [float(len(ids) - r) for r in range(len(ids))]
    scores = jmespath.search(endpoint.scores, answer)
    if not isinstance(scores, list) or len(scores) != len(ids) or not all(
            isinstance(s, (int, float)) and not isinstance(s, bool) for s in scores):
        raise EndpointFailed(f"{what}: --scores {endpoint.scores!r} found no number for each of the {len(ids)} ids for {about}")
    return ids, [float(s) for s in scores]


def endpoint_rankings(db: Database, names: list[str], *, questions: list[dict[str, Any]], k: int,
                      corpus: str) -> dict[str, dict[str, list[Hit]]]:
    """Every question's top `k` from each endpoint of `names`, as Supplied rankings named `http:NAME`;
    an id that is no record of `corpus` is refused naming the endpoint, question and id."""
    by_name = {e.name: e for e in endpoints(db)}
    out: dict[str, dict[str, list[Hit]]] = {}
    for name in names:
        endpoint = by_name[name]
        service = Service(f"endpoint {name}", timeout=endpoint.timeout, concurrency=endpoint.concurrency,
                          retries=endpoint.retries)
        answers = call_all(service, [_call(endpoint, q, k) for q in questions])
        ranked = {record_str(q["id"]): _ranking(endpoint, a, record_str(q["id"])) for q, a in zip(questions, answers)}
        records = {i: to_record(i, corpus) for ids, _ in ranked.values() for i in ids}
        gone = missing_records(db, list(records.values()))
        if gone:
            question, doc = next((q, i) for q, (ids, _) in ranked.items() for i in ids if record_str(records[i]) in gone)
            raise InputError(f"endpoint {name} returned {doc!r} for {question}, which is not a record of {corpus}"
                             + (f" ({len(gone) - 1} more unknown ids)" if len(gone) > 1 else "")
                             + ": check --ids, or evaluate with the --corpus it searches")
        out[PREFIX + name] = {q: [{"id": records[i], "score": s} for i, s in zip(ids, scores)][:k]
                              for q, (ids, scores) in ranked.items()}
    return out
