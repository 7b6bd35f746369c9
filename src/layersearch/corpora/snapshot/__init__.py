"""The semantic layer as compact, persisted tables: what a search needs, without loading it.

A search touches a few hundred entities (the hits it renders, the kinds of the
candidates it fuses, the references it resolves); loading a million
:class:`Entity` objects to serve it took seconds and gigabytes. Here entities,
their outgoing edges and the resolver's lookup tables are a handful of arrays
(:class:`EntityTables`), saved beside the full-text index and mapped back by
the next process; an entity is decoded from its row when asked for.

On disk, like the full-text index: ``<index_dir>/snapshot/CURRENT`` names a
generation directory holding ``tables/`` (the arrays), ``snapshot.json`` (the
store generation it reflects, a hash of its content and of the code that
wrote it) and, once a question has been asked, ``coverage/`` (the schema
channel's index). A directory is complete before ``CURRENT`` points at it, so
a crash leaves at worst an unused directory. A snapshot whose stamp, format or
code differs, or whose files are unreadable, is rebuilt from the store; when
the store's entities are unchanged (only memories or vectors moved the
generation) the existing directory is re-stamped and kept, coverage included.
"""

from layersearch.corpora.snapshot.generations import (
    Snapshot,
    open_snapshot,
    publish_snapshot,
    release_freed_memory,
    restamp,
)
from layersearch.corpora.snapshot.maps import EdgeMap, EntityMap
from layersearch.corpora.snapshot.schema_index import CoverageBuild
from layersearch.corpora.snapshot.tables import (
    EntityTables,
    changed_entities,
    tables_from_objects,
    tables_from_store,
)

__all__ = [
    "EntityTables",
    "EntityMap",
    "EdgeMap",
    "CoverageBuild",
    "Snapshot",
    "changed_entities",
    "open_snapshot",
    "publish_snapshot",
    "release_freed_memory",
    "restamp",
    "tables_from_objects",
    "tables_from_store",
]
