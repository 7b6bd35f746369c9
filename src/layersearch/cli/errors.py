"""The CLI's error contract: one ``error: …`` line on stderr (or a JSON error object on
stdout under ``--json``) and a non-zero exit; a traceback only with LAYERSEARCH_DEBUG=1."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from layersearch.errors import LayersearchError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USER_ERROR = 2
EXIT_INTERNAL = 1
EXIT_BROKEN_PIPE = 141


def handle_errors(fn: F) -> F:
    """One clear line and a non-zero exit for every failure; never a traceback."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            return _undoing_a_new_store(fn, *args, **kwargs)
        except LayersearchError as exc:
            fail(exc.code, str(exc), as_json, EXIT_USER_ERROR)
        except KeyboardInterrupt:
            fail("interrupted", "interrupted", as_json, 130)
        except (click.exceptions.Exit, click.ClickException, BrokenPipeError):
            raise
        except Exception as exc:  # noqa: BLE001 - the last line of defence for a CLI
            if os.environ.get("LAYERSEARCH_DEBUG"):
                raise
            from layersearch.errors import disk_full_error, is_disk_full

            if is_disk_full(exc):
                full = disk_full_error(getattr(exc, "filename", None) or "the store", exc)
                fail(full.code, str(full), as_json, EXIT_USER_ERROR)
            fail(
                "internal_error",
                f"internal error: {type(exc).__name__}: {exc} (set LAYERSEARCH_DEBUG=1 for a traceback)",
                as_json,
                EXIT_INTERNAL,
            )

    return wrapper  # type: ignore[return-value]


def _undoing_a_new_store(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn``, then the store it created is removed again if nothing was written to it: a
    failed ``load`` of a missing path, or an import that read nothing, leaves no store."""
    try:
        return fn(*args, **kwargs)
    finally:
        from layersearch.cli.context import Ctx

        ctx = click.get_current_context(silent=True)
        obj = ctx.find_object(Ctx) if ctx is not None else None
        if obj is not None:
            obj.after_command()


def fail(code: str, message: str, as_json: bool, exit_code: int) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    else:
        first, *rest = message.splitlines() or [""]
        click.echo(f"error: {first}", err=True)
        for line in rest:
            click.echo(line, err=True)
    sys.exit(exit_code)


def stdout_closed() -> None:
    """The reader of stdout went away (``layersearch memory list | head``): stop quietly,
    with the exit status of a process killed by SIGPIPE (128 + 13), as ``git`` or ``cat``
    end in the same pipe. Python's own flush at exit would fail again on the closed pipe,
    so stdout is pointed at /dev/null first."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout without a file descriptor (an in-process runner)
        pass
    sys.exit(EXIT_BROKEN_PIPE)


def suggest_option(exc: click.UsageError) -> click.UsageError:
    """The error with one "did you mean" for an unknown option: the options it abbreviates
    (``--max`` for ``--max-results``, not click's guess ``--tag``), else click's own close
    matches, else looser misspellings."""
    if not isinstance(exc, click.NoSuchOption) or exc.ctx is None:
        return exc
    import difflib

    given = exc.option_name
    names = sorted(
        {
            opt
            for param in exc.ctx.command.get_params(exc.ctx)
            if isinstance(param, click.Option)
            for opt in (*param.opts, *param.secondary_opts)
            if opt.startswith("--")
        }
    )
    found = [n for n in names if n.startswith(given)] if given.startswith("--") else []
    found = found or list(exc.possibilities or ())
    found = found or difflib.get_close_matches(given, names, n=3, cutoff=0.5)
    if not found:
        return exc
    from click.exceptions import _format_possibilities  # click's own wording

    # exc.message, not format_message(): that already holds click's guess
    return click.UsageError(f"{exc.message} {_format_possibilities(found)}", exc.ctx)


def usage_error(exc: click.UsageError, as_json: bool) -> None:
    if as_json:
        fail("usage", exc.format_message(), True, EXIT_USER_ERROR)
    click.echo(f"error: {exc.format_message()}", err=True)
    if exc.ctx is not None:
        click.echo(exc.ctx.get_usage(), err=True)
    sys.exit(EXIT_USER_ERROR)
