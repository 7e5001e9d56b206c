"""The fields an attach maps, as one model (CorpusFields for `attach`, GoldenFields for `golden attach`): each field
checked as the option naming it, and the library's attach functions taking the model or, as 0.1 did, keywords."""

from __future__ import annotations

import pytest

from surreal_eval import CorpusFields
from surreal_eval.errors import ConfigError
from surreal_eval.golden.attach import GoldenFields, attach_golden
from surreal_eval.load.attach import attach_table


@pytest.mark.parametrize(("make", "says"), [
    (lambda: CorpusFields(content="my text"), "--content field 'my text' is not a valid identifier"),
    (lambda: CorpusFields(content="body", doc="meta..doc"), "--doc field 'meta..doc': part"),
    (lambda: GoldenFields(text="ask", relevant="select"), "--relevant field 'select' is a SurrealQL keyword"),
    (lambda: GoldenFields(text="", relevant="gold"), "--text field '' is not a valid identifier"),
])
def test_a_name_that_is_no_field_is_refused_naming_the_option_that_gives_it(make, says):
    with pytest.raises(ConfigError, match=f"^{says}"):
        make()


def test_an_optional_field_given_empty_is_none_and_a_path_is_kept_as_written():
    fields = GoldenFields(text="meta.question", relevant="gold", embedding="", grades=None)
    assert fields.model_dump() == {"text": "meta.question", "relevant": "gold", "embedding": None, "grades": None,
                                   "category": None, "language": None}


def test_a_corpus_attached_with_its_fields_as_one_model_is_what_the_keywords_attach(lesson):
    by_keywords = attach_table(lesson, "article", content="content", embedding="embedding", title="title", bm25_fields=["content"])
    mapping = CorpusFields(content="content", embedding="embedding", title="title")
    by_model = attach_table(lesson, "article", mapping, bm25_fields=["content"])
    assert by_model == by_keywords
    assert (by_model.content, by_model.embedding, by_model.title, by_model.doc) == ("content", "embedding", "title", None)


def test_a_golden_set_attached_with_its_fields_as_one_model_is_what_the_keywords_attach(lesson):
    by_keywords = attach_golden(lesson, "question", text="text", relevant="relevant", grades="grades", category="category")
    by_model = attach_golden(lesson, "question", GoldenFields(text="text", relevant="relevant", grades="grades", category="category"))
    assert by_model == by_keywords
    assert by_model.fields == {"text": "text", "relevant": "relevant", "embedding": None, "grades": "grades",
                               "category": "category", "language": None}
    # the lesson's eight questions label 3 + 1 + 2 + 1 + 1 + 1 + 1 + 1 articles (surql/lesson.surql)
    assert (by_model.questions, by_model.labels) == (8, 11)


@pytest.mark.parametrize(("call", "says"), [
    (lambda db: attach_table(db, "article", CorpusFields(content="content"), title="title"), "fields given twice"),
    (lambda db: attach_table(db, "article", contents="content"), "unexpected keyword argument 'contents'"),
    (lambda db: attach_table(db, "article", embedding="embedding"), "missing field 'content'"),
    (lambda db: attach_golden(db, "question", GoldenFields(text="text", relevant="relevant"), text="text"), "fields given twice"),
    (lambda db: attach_golden(db, "question", CorpusFields(content="text")), "fields must be a GoldenFields"),
])
def test_fields_given_twice_unknown_or_missing_are_a_type_error_as_a_bad_call_is(lesson, call, says):
    before = lesson.value("SELECT * FROM seval_corpus ORDER BY id"), lesson.value("SELECT * FROM seval_golden ORDER BY id")
    with pytest.raises(TypeError, match=says):
        call(lesson)
    assert (lesson.value("SELECT * FROM seval_corpus ORDER BY id"), lesson.value("SELECT * FROM seval_golden ORDER BY id")) == before
