"""The public API: everything in __all__ exists, and the exception tree has one root."""

import surreal_eval
from surreal_eval import errors


def test_all_names_exist():
    for name in surreal_eval.__all__:
        assert hasattr(surreal_eval, name), name


def test_every_error_derives_from_the_package_root():
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.SurrealEvalError)


def test_password_never_appears_in_settings_repr():
    settings = surreal_eval.Settings(url="ws://h:8000", user="root", password="hunter2")
    assert "hunter2" not in repr(settings) and "hunter2" not in settings.describe()
    assert "hunter2" not in settings.model_dump_json()
