"""The folder of an embedded store (surrealkv://PATH) around an open: what is refused before, what is undone after.

Only a store, or a new or empty folder, is opened: the engine would otherwise make a store among the
files of a folder that is not one, and fails on a file. A store that another version of the engine wrote
(SurrealDB 2.x: "Unsupported manifest format version: 0") is refused in one line, and what the failed open
made inside it (LOCK, sstables/, vlog/, wal/) is removed again, so the folder is left as it was. Nothing
that existed before the open is ever removed, and nothing is removed after an open that got further than
reading the store's manifest (a store being opened may write files the manifest then names).
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..errors import ConfigError

log = logging.getLogger(__name__)

__all__ = ["Before", "NewStore", "new_store", "refuse_unusable_folder", "refuse_missing_store", "entries",
           "undo_failed_open", "foreign_store", "FOREIGN_FORMAT"]

#: What the engine says when the store's format is not one it reads (surrealkv's manifest header).
FOREIGN_FORMAT = ("Unsupported manifest format version", "Failed to load manifest")
#: What the engine says when it could not open a store at all (nothing was read or written through it).
_OPEN_FAILED = "failed while opening the database"


def refuse_unusable_folder(url: str, folder: Path) -> None:
    """ConfigError unless `folder` is missing, an empty folder, or a folder holding a store (its `manifest`)."""
    if not folder.exists() and not folder.is_symlink():
        return
    if not folder.is_dir():
        raise ConfigError(f"--url {url!r}: {folder} is a file, not a store's folder; name the folder of a store, "
                          "or a new or empty folder for a new store")
    names = os.listdir(folder)
    if names and "manifest" not in names:
        shown = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
        raise ConfigError(f"--url {url!r}: {folder} holds other files ({shown}) and no SurrealDB store (no manifest "
                          "folder); name the folder of a store, or a new or empty folder for a new store")


def _missing_from(folder: Path) -> Path:
    """The first part of `folder`'s path that does not exist (the folder itself, or a parent)."""
    missing = folder
    for parent in folder.parents:
        if parent.exists() or parent.is_symlink() or parent == Path("."):
            break
        missing = parent
    return missing


def refuse_missing_store(url: str, folder: Path) -> None:
    """ConfigError unless `folder` holds a store (its `manifest`), for a command that must not make one: a missing
    path or an empty folder is refused (refuse_unusable_folder has refused a file and a folder of other files)."""
    if not folder.exists() and not folder.is_symlink():
        missing = _missing_from(folder)
        what = (f"{missing} does not exist" if missing == folder
                else f"{missing}, the folder it would be in, does not exist")
        raise ConfigError(f"--url {url!r}: no store at {folder} ({what}); check --url, or make a new store there with "
                          "`surreal-eval init` or a `load`; nothing was created")
    if folder.is_dir() and not (folder / "manifest").exists():
        raise ConfigError(f"--url {url!r}: no store at {folder} (an empty folder); check --url, or make a new store "
                          "there with `surreal-eval init` or a `load`; nothing was created")


@dataclass(frozen=True)
class NewStore:
    """What an open that makes a new store makes on disk: `root`, the first part of the store's path that did not
    exist (removed whole), or the store's folder itself when it was there and empty (`keep_root`: emptied, kept)."""

    root: Path
    keep_root: bool

    def remove(self) -> None:
        """Leave the disk as it was before the open (the store closed): for a command that failed on a new store."""
        if not self.root.is_dir():
            return
        if self.keep_root:
            _remove(self.root, sorted(os.listdir(self.root)))
        else:
            _remove(self.root.parent, [self.root.name])


def new_store(folder: Path) -> NewStore | None:
    """What opening `folder` would make (None: it holds a store, or something refuse_unusable_folder refuses)."""
    if not folder.exists() and not folder.is_symlink():
        return NewStore(_missing_from(folder), keep_root=False)
    if folder.is_dir() and not folder.is_symlink() and not os.listdir(folder):
        return NewStore(folder, keep_root=True)
    return None


@dataclass(frozen=True)
class Before:
    """A store's folder before an open: every path in it, and its LOCK file's bytes and times (the engine
    writes its process id into a LOCK that is there before it reads the manifest)."""

    paths: frozenset[str]
    lock: tuple[bytes, int, int] | None


def entries(folder: Path) -> Before | None:
    """What `folder` holds (symbolic links not followed); None if it does not exist."""
    if not folder.is_dir():
        return None
    found: set[str] = set()
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(root, name), folder))
    lock = folder / "LOCK"
    kept = None
    if lock.is_file() and not lock.is_symlink():
        stat = lock.stat()
        kept = (lock.read_bytes(), stat.st_atime_ns, stat.st_mtime_ns)
    return Before(frozenset(found), kept)


def undo_failed_open(folder: Path, before: Before | None, message: str) -> list[str]:
    """After an open of `folder` that failed, remove what it made, and only that: everything if the folder
    was new or empty, the paths not in `before` if the engine refused the store's format; nothing after
    any other failure (the engine may have got further). The paths removed, relative to `folder`."""
    if _OPEN_FAILED not in message or not folder.is_dir():
        return []
    if before is None or not before.paths:  # the open made the folder, or everything in it
        made = sorted(os.listdir(folder))
        if before is None:
            _remove(folder.parent, [folder.name])
        else:
            _remove(folder, made)
        return made
    if not any(text in message for text in FOREIGN_FORMAT):
        return []
    removed: list[str] = []
    _remove_new(folder, folder, before.paths, removed)
    if before.lock is not None:
        data, atime, mtime = before.lock
        try:
            (folder / "LOCK").write_bytes(data)
            os.utime(folder / "LOCK", ns=(atime, mtime))
        except OSError as error:
            log.warning("could not put back %s as it was: %s", folder / "LOCK", error)
    return removed


def _remove(folder: Path, names: list[str]) -> None:
    for name in names:
        path = folder / name
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError as error:  # the refusal still reaches the user; this says what stayed
            log.warning("could not remove %s, which the failed open made: %s", path, error)


def _remove_new(folder: Path, here: Path, before: frozenset[str], removed: list[str]) -> None:
    """Remove every path under `here` that is not in `before`, descending only into folders that were there."""
    for entry in sorted(os.scandir(here), key=lambda e: e.name):
        relative = os.path.relpath(entry.path, folder)
        if relative not in before:
            _remove(Path(here), [entry.name])
            removed.append(relative)
        elif entry.is_dir(follow_symlinks=False):
            _remove_new(folder, Path(entry.path), before, removed)


def _sdk() -> str:
    for name in ("surrealdb-embedded", "surrealdb"):
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return "surrealdb"


def foreign_store(url: str, message: str) -> ConfigError | None:
    """The refusal of a store another version of the engine wrote (None if `message` is another failure)."""
    cause = next((text for text in FOREIGN_FORMAT if text in message), None)
    if cause is None:
        return None
    detail = message[message.index(cause):]
    return ConfigError(
        f"--url {url!r} is a store written by another version of SurrealDB's engine, in a format this one does not "
        f"read ({detail}; SurrealDB 2.x, e.g. the surrealdb 1.x/2.x Python SDKs, writes such stores); surreal-eval "
        f"runs the SurrealDB 3 engine of the Python SDK {_sdk()}: export the data where it was written "
        "(`surreal export`) and import it into a new store; the folder was left as it was")
