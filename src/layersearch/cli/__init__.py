"""The ``layersearch`` command: arguments → api → rich tables for people, JSON for machines.

Errors are one line on stderr (or a JSON object with ``--json``) and a non-zero
exit; a traceback only with LAYERSEARCH_DEBUG=1.

One module per command group, on a few shared ones:

- ``app``: the root group and its global options; ``context``: what every command is
  handed (settings, the API on the store); ``errors``: the exit and error contract;
  ``options``: options several commands take; ``output``: printing for people and JSON;
  ``progress``: spinners and bars on stderr.
- ``layer``: init, load, embed; ``entities``: search, inspect, demo; ``memories``: memory;
  ``chats``: conversations, summaries; ``notes``: vault; ``evals``: eval (``plan_eval``:
  eval plans); ``serving``: serve.
"""

from __future__ import annotations

import gc
import os
import threading

# Before numpy loads (the CLI and the MCP server it starts begin here): one BLAS thread
# unless the user chose otherwise. Our matrix-vector products gain nothing from more, and
# OpenBLAS's spinning workers take the core the next step of a search needs (docs/vault.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

#: Seconds a new process runs without the cyclic garbage collector. Importing the
#: package and its libraries makes some 90,000 objects that live as long as the
#: process, and each collection during the imports walks them all again: a lexical
#: search command took 0.09 s less without (benchmarks/local_embedder.py --only cli).
#: A short command ends before the collector is back; a longer one (serve, embed,
#: import) gets it back after this long.
GC_PAUSE_S = 2.0
if gc.isenabled():
    gc.disable()
    _resume = threading.Timer(GC_PAUSE_S, gc.enable)
    _resume.daemon = True
    _resume.start()

from layersearch.cli.app import main  # noqa: E402
from layersearch.cli.chats import (  # noqa: E402
    conversations,
    conversations_embed,
    conversations_import,
    conversations_search,
    conversations_semantic,
    summaries,
    summaries_import,
    summaries_search,
)
from layersearch.cli.context import Ctx  # noqa: E402
from layersearch.cli.entities import DEMO_SEARCHES, bundled_models, demo, inspect, search  # noqa: E402
from layersearch.cli.errors import (  # noqa: E402
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_USER_ERROR,
    handle_errors,
)
from layersearch.cli.evals import (  # noqa: E402
    eval_abbreviate_catalog,
    eval_conversations_cmd,
    eval_examples,
    eval_group,
    eval_layers,
    eval_schema_linking,
    eval_vault,
)
from layersearch.cli.layer import embed, init, load  # noqa: E402
from layersearch.cli.memories import (  # noqa: E402
    memory,
    memory_add,
    memory_forget,
    memory_list,
    memory_show,
)
from layersearch.cli.notes import vault, vault_get, vault_index, vault_search  # noqa: E402
from layersearch.cli.options import json_option  # noqa: E402
from layersearch.cli.output import WIDE, emit_json  # noqa: E402
from layersearch.cli.plan_eval import eval_plans  # noqa: E402
from layersearch.cli.progress import Progress  # noqa: E402
from layersearch.cli.serving import serve  # noqa: E402

for _command in (
    init,
    load,
    search,
    inspect,
    memory,
    demo,
    embed,
    eval_group,
    conversations,
    summaries,
    vault,
    serve,
):
    main.add_command(_command)

__all__ = [
    "DEMO_SEARCHES",
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERNAL",
    "EXIT_USER_ERROR",
    "WIDE",
    "Ctx",
    "Progress",
    "bundled_models",
    "conversations",
    "conversations_embed",
    "conversations_import",
    "conversations_search",
    "conversations_semantic",
    "demo",
    "embed",
    "emit_json",
    "eval_abbreviate_catalog",
    "eval_conversations_cmd",
    "eval_examples",
    "eval_group",
    "eval_layers",
    "eval_plans",
    "eval_schema_linking",
    "eval_vault",
    "handle_errors",
    "init",
    "inspect",
    "json_option",
    "load",
    "main",
    "memory",
    "memory_add",
    "memory_forget",
    "memory_list",
    "memory_show",
    "run",
    "search",
    "serve",
    "summaries",
    "summaries_import",
    "summaries_search",
    "vault",
    "vault_get",
    "vault_index",
    "vault_search",
]


def run() -> None:  # pragma: no cover - console entry for python -m
    main()
