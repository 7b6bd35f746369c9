"""What every command is handed: the global options, the settings file, and the API on
the configured store, opened once and only when a command needs it."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

from layersearch.errors import ConfigError


class Ctx:
    def __init__(
        self,
        store: str | None,
        verbose: bool,
        embedder: str | None = None,
        config: str | None = None,
    ) -> None:
        self.store = store
        self.verbose = verbose
        self.embedder = embedder
        self.embedder_options: dict[str, Any] | None = None
        self.config = config
        #: where the store setting came from, for --verbose
        self.store_origin = "--store or LAYERSEARCH_STORE" if store else "the default"
        self._ls: Any = None
        #: the store file this command created, and the generation it was created at
        self._created: tuple[Path, int, list[Path]] | None = None
        #: the open pin of a command's reads (:meth:`api`'s ``pinned``)
        self._pin: contextlib.AbstractContextManager[None] | None = None

    def settings(self) -> Any:
        """layersearch.toml (or --config / $LAYERSEARCH_CONFIG) under the command-line flags."""
        from layersearch.config import load_settings

        settings = load_settings(self.config)
        if self.store is None:
            self.store = settings.store
            self.store_origin = f"from {settings.source}" if settings.store else "the default"
        if self.embedder is None:
            self.embedder = settings.embedder
        if self.embedder == settings.embedder:
            self.embedder_options = dict(settings.embedder_options or {}) or None
        return settings

    def api(
        self,
        *,
        create: bool = False,
        embeds_query: bool = False,
        keep_empty: bool = False,
        pinned: bool = False,
    ) -> Any:
        """The API on the configured store. Only commands that write pass ``create``, once
        their input is read: a read on a store that does not exist is an error naming it,
        and creates nothing; a store a command created is removed again when the command
        ends without writing to it, failed or not (:meth:`discard_new_store`), unless it
        passes ``keep_empty`` (``init``). A command that will embed its query passes
        ``embeds_query``: a local model then loads on another thread while the store
        opens. A command of one bounded read (``search``) passes ``pinned``: a DuckDB
        file is then opened once for the opening's check and every read after it, until
        the command ends (:meth:`after_command`), not once for each (~15 ms an open)."""
        if self._ls is None:
            settings = self.settings()
            embedder = self._embedder(prefetch=embeds_query)
            from layersearch.api import Layersearch, resolve_store_location, store_missing

            location = resolve_store_location(self.store)
            path = Path(location)
            if pinned and "://" not in location and self._pin is None:
                from layersearch.store.access import gate_for

                self._pin = gate_for(path).pinned()
                self._pin.__enter__()
            new = create and store_missing(location)
            # the folders a new store's creation makes, deepest first
            folders = [d for d in path.absolute().parents if not d.exists()] if new else []
            self._ls = Layersearch(
                location,
                create=create,
                embedder=embedder,
                embedder_config=self.embedder_options,
                ranking=settings.ranking,
            )
            if new and not keep_empty:
                self._created = (path, self._ls.store.generation(), folders)
            shown = self._ls.store.location
            if "://" not in shown:
                shown = str(Path(shown).absolute())
            logging.getLogger("layersearch.cli").info("store %s (%s)", shown, self.store_origin)
        return self._ls

    def after_command(self) -> None:
        """What every command does last, failed or not: its pin of the store's reads ends
        (another process may write), and a store it created and left empty goes."""
        pin, self._pin = self._pin, None
        if pin is not None:
            pin.__exit__(None, None, None)
        self.discard_new_store()

    def discard_new_store(self) -> None:
        """After a command: remove the store it created (its file, generation file, log and
        indexes, and the folders made for it), unless a write reached it since (by this
        command or another process: its generation moved on)."""
        if self._created is None or self._ls is None:
            return
        path, generation, folders = self._created
        self._created = None
        try:
            written = self._ls.store.generation() != generation
        except Exception:  # noqa: BLE001 - an unreadable store is kept, not removed
            written = True
        if written:
            return
        import contextlib
        import shutil

        self._ls.close()
        self._ls = None
        # the lock file too: no other process knew of this store to wait on it
        sides = (".wal", ".gen", ".lock")
        for side in (path, *(path.with_name(path.name + ext) for ext in sides)):
            with contextlib.suppress(OSError):
                side.unlink()
        shutil.rmtree(path.with_name(path.name + ".index"), ignore_errors=True)
        for folder in folders:
            with contextlib.suppress(OSError):  # not empty: something else is there now
                folder.rmdir()
        logging.getLogger("layersearch.cli").info("removed the new store %s", path)

    def read_api(self, *, embeds_query: bool = False, pinned: bool = False) -> Any:
        """The API for a command that reads the semantic layer or memories: a store that
        holds neither is an error saying how to fill it."""
        ls = self.api(embeds_query=embeds_query, pinned=pinned)
        ls.require_content()
        return ls

    def _embedder(self, *, prefetch: bool) -> Any:
        """The embedder: the one configured, else ``local`` when the ``[local]`` extra is
        installed (``--embedder none`` turns it off); with ``prefetch``, built here and,
        when its model is local, already loading (``LocalEmbedder.prefetch``)."""
        from layersearch.embed import NO_EMBEDDER, make_embedder, resolve_spec

        spec = resolve_spec(self.embedder, use_default=True)
        if spec is not None and self.embedder is None:
            logging.getLogger("layersearch.cli").info(
                "embedder %s (installed; --embedder none for the lexical channels only)", spec
            )
        if spec is None:
            return NO_EMBEDDER  # not None: the API would read $LAYERSEARCH_EMBEDDER again
        if not prefetch:
            return spec
        embedder = make_embedder(spec, config=self.embedder_options)
        start = getattr(embedder, "prefetch", None)
        if start is not None:
            start()
        return embedder


def with_embedder(obj: Ctx) -> Any:
    """The API, for a command that cannot do anything without an embedder."""
    ls = obj.api()
    if ls.embedder is None:
        off = obj.embedder is not None  # given, and it was `none`
        raise ConfigError(
            ("the embedder is turned off (none): " if off else "no embedder configured: ")
            + "pass --embedder local|fake|litellm:<model> or set LAYERSEARCH_EMBEDDER"
            + ("" if off else " (`local` is the default once layersearch[local] is installed)")
        )
    return ls
