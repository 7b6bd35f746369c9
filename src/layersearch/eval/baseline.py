"""A plain tantivy index as the floor schema linking must clear (``--baseline``).

The product's lexical search must never rank below what anyone gets by putting the
catalog's texts in tantivy with its defaults. This module builds that index from
the loaded catalog and asks it every question, so ``eval schema-linking`` can report
it as its own row beside the pipeline's:

- one document per visible table (model) and per visible column, measure and
  aggregation, in one index (BM25 statistics over all of them);
- one text field, tantivy's ``default`` tokenizer (split on what is not a letter or a
  digit, lower-cased, tokens over 40 bytes dropped), BM25 with tantivy's defaults;
- the question goes through that same analyser and becomes an OR of its distinct
  terms (no query parser: punctuation and quotes cannot fail);
- tables rank by their own document's score, columns by theirs (the top
  :data:`~layersearch.eval.schema_linking.SEARCH_DEPTH` of each kind).

The variants (:data:`BASELINES`) differ in the text and in how tables rank:

``tantivy``
    the text of the entity's full-text document
    (:func:`~layersearch.corpora.entities.documents.entity_doc`: name, label, parent
    name, description, formula, sample values), each distinct value once;
``tantivy-names``
    names only: the entity's name and its parent's (a column's table, a table's
    database);
``tantivy-max``
    the ``tantivy`` text, tables ranked as the pipeline's hits are read: one search
    over tables and columns together, a table at the first of its own document and
    its columns' (the max of their scores);
``tantivy-stem``
    the ``tantivy`` text through tantivy's ``en_stem`` tokenizer (the default one and
    an English stemmer: "singers" finds "singer").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import tantivy

from layersearch.corpora.entities.documents import entity_doc
from layersearch.errors import ConfigError
from layersearch.eval.metrics import aggregate
from layersearch.eval.schema_linking import (
    MODES,
    SEARCH_DEPTH,
    ChannelSetResult,
    link_row,
    question_text,
    ranked_links,
)
from layersearch.semantic.model import Entity

__all__ = [
    "BASELINES",
    "Baseline",
    "TantivyBaseline",
    "entity_text",
    "parse_baselines",
    "run_baselines",
]

_TABLE_KINDS = ("model",)
_LEAF_KINDS = ("column", "measure", "aggregation")
#: tantivy's own ``default`` tokenizer's longest token (RemoveLongFilter)
_LONGEST_TOKEN = 40
_WRITER_HEAP = 50_000_000


@dataclass(frozen=True, slots=True)
class Baseline:
    """One variant: which entity texts are indexed and how tables rank."""

    name: str
    names_only: bool = False
    tables_by_max: bool = False
    #: tantivy's ``en_stem`` tokenizer (the default one plus an English stemmer)
    stem: bool = False


BASELINES: dict[str, Baseline] = {
    b.name: b
    for b in (
        Baseline("tantivy"),
        Baseline("tantivy-names", names_only=True),
        Baseline("tantivy-max", tables_by_max=True),
        Baseline("tantivy-stem", stem=True),
    )
}


def entity_text(e: Entity, names_only: bool = False) -> str:
    """The indexed text of ``e``: its full-text document's field values, each distinct
    value once (a label equal to the name is not said twice), or with ``names_only``
    the name and parent fields."""
    fields = entity_doc(e).fields
    keys = ("name", "parent") if names_only else tuple(fields)
    seen: set[str] = set()
    parts: list[str] = []
    for key in keys:
        value = fields.get(key)
        if value and value.lower() not in seen:
            seen.add(value.lower())
            parts.append(value)
    return " ".join(parts)


class TantivyBaseline:
    """A RAM tantivy index of the given entities' texts, asked with term-OR queries."""

    def __init__(
        self, entities: Iterable[Entity], *, names_only: bool = False, stem: bool = False
    ) -> None:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("text", stored=False, tokenizer_name="en_stem" if stem else "default")
        sb.add_text_field("id", stored=True, tokenizer_name="raw")
        sb.add_text_field("kind", stored=True, tokenizer_name="raw")
        sb.add_text_field("ds", stored=False, tokenizer_name="raw")
        self._schema = sb.build()
        self._index = tantivy.Index(self._schema)
        # one thread, one segment: documents keep the order given, and equal scores
        # keep that order on every run
        writer = self._index.writer(_WRITER_HEAP, 1)
        self.documents = 0
        for e in entities:
            if e.kind not in _TABLE_KINDS and e.kind not in _LEAF_KINDS:
                continue
            writer.add_document(
                tantivy.Document(
                    text=entity_text(e, names_only),
                    id=e.id,
                    kind="table" if e.kind in _TABLE_KINDS else "leaf",
                    ds=e.datasource,
                )
            )
            self.documents += 1
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()
        self._searcher = self._index.searcher()
        # the analyser of the "default" (or "en_stem") tokenizer, to cut the question as
        # the index cut the documents
        builder = (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(_LONGEST_TOKEN))
            .filter(tantivy.Filter.lowercase())
        )
        if stem:
            builder = builder.filter(tantivy.Filter.stemmer("english"))
        self._analyzer = builder.build()

    def terms(self, question: str) -> list[str]:
        """The question's distinct terms as the index's tokenizer reads them."""
        return list(dict.fromkeys(self._analyzer.analyze(question)))

    def search(
        self, question: str, *, kind: str | None = None, datasource: str | None = None
    ) -> list[tuple[str, str]]:
        """(entity kind, id) of the best :data:`SEARCH_DEPTH` documents, best first; ``kind``:
        ``table`` or ``leaf`` only; ``datasource``: that database's only."""
        terms = self.terms(question)
        if not terms:
            return []
        words = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "text", t))
                for t in terms
            ]
        )
        clauses = [(tantivy.Occur.Must, words)]
        for field, value in (("kind", kind), ("ds", datasource)):
            if value is not None:
                exact = tantivy.Query.term_query(self._schema, field, value)
                # a filter, not evidence: it adds nothing to the score
                clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(exact, 0.0)))
        query = tantivy.Query.boolean_query(clauses)
        found = self._searcher.search(query, SEARCH_DEPTH).hits
        out: list[tuple[str, str]] = []
        for _score, address in found:
            doc = self._searcher.doc(address)
            out.append((_KIND_OF[doc["kind"][0]], doc["id"][0]))
        return out

    def rank(
        self, question: str, *, datasource: str | None = None, tables_by_max: bool = False
    ) -> tuple[list[str], list[str]]:
        """Ranked table ids and column ids for ``question``."""
        columns = [i for _, i in self.search(question, kind="leaf", datasource=datasource)]
        if tables_by_max:
            hits = [
                SimpleNamespace(kind=k, id=i)
                for k, i in self.search(question, datasource=datasource)
            ]
            tables, _ = ranked_links(hits)
        else:
            tables = [i for _, i in self.search(question, kind="table", datasource=datasource)]
        return tables, columns


#: the stored kind → the kind a hit of it counts as (:func:`ranked_links`)
_KIND_OF = {"table": "model", "leaf": "column"}


def parse_baselines(names: Sequence[str]) -> list[Baseline]:
    """The variants named, each once, in the order given."""
    out: list[Baseline] = []
    for name in names:
        b = BASELINES.get(name)
        if b is None:
            raise ConfigError(f"unknown baseline '{name}'; use one of {', '.join(BASELINES)}")
        if b not in out:
            out.append(b)
    return out


def run_baselines(
    ls: Any,
    questions: Sequence[dict[str, Any]],
    baselines: Sequence[Baseline],
    *,
    mode: str = "catalog",
    progress: Callable[[int], None] | None = None,
) -> list[ChannelSetResult]:
    """Every question asked of each baseline's index (built here from the visible
    entities of ``ls``, an open :class:`~layersearch.api.Layersearch`), scored as :func:`~layersearch.eval.schema_linking.run_schema_linking` scores the
    pipeline; one result per baseline, named after it."""
    if mode not in MODES:
        raise ConfigError(f"unknown mode '{mode}'; use one of {', '.join(MODES)}")
    corpus = ls.corpus()
    entities = sorted(
        (e for e in corpus.entities.values() if corpus.visible(e.id)), key=lambda e: e.id
    )
    results: list[ChannelSetResult] = []
    indexes: dict[tuple[bool, bool], TantivyBaseline] = {}
    done = 0
    for b in baselines:
        key = (b.names_only, b.stem)
        index = indexes.get(key)
        if index is None:
            index = indexes[key] = TantivyBaseline(entities, names_only=b.names_only, stem=b.stem)
        rows: list[dict[str, Any]] = []
        lat: list[float] = []
        for q in questions:
            t0 = time.perf_counter()
            tables, columns = index.rank(
                question_text(q),
                datasource=q["db_id"] if mode == "scoped" else None,
                tables_by_max=b.tables_by_max,
            )
            lat.append((time.perf_counter() - t0) * 1000)
            rows.append(link_row(q, tables, columns))
            done += 1
            if progress is not None:
                progress(done)
        results.append(ChannelSetResult([], aggregate(rows), rows, lat, name=b.name))
    return results
