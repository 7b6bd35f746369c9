"""The root ``layersearch`` group: the global options, and usage errors made to follow
the same contract as the commands' own errors."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from layersearch.cli.context import Ctx
from layersearch.cli.errors import stdout_closed, suggest_option, usage_error
from layersearch.cli.output import terminal_streams


class _Cli(click.Group):
    """The root group: usage errors click finds itself (a value that is not an integer, a
    choice that is not offered) follow the same contract as ours: exit 2 and one
    ``error: …`` line on stderr, or a JSON error object on stdout under ``--json``."""

    def main(  # type: ignore[override]
        self,
        args: list[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        # Every command's text reaches the terminal through one place: no control
        # character of stored or imported text (cli/output.py).
        with terminal_streams():
            if not standalone_mode:
                return super().main(args, prog_name, complete_var, False, **extra)
            argv = list(sys.argv[1:] if args is None else args)
            self._standalone(argv, prog_name, complete_var, **extra)

    def _standalone(
        self, argv: list[str], prog_name: str | None, complete_var: str | None, **extra: Any
    ) -> None:
        try:
            rv = super().main(argv, prog_name, complete_var, False, **extra)
            sys.stdout.flush()
        except BrokenPipeError:
            stdout_closed()
        except click.UsageError as exc:
            usage_error(suggest_option(exc), "--json" in argv)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        # Without standalone mode click returns --help/--version's exit code instead of exiting.
        sys.exit(rv if isinstance(rv, int) else 0)

    # A closed stdout is caught here, before click's main turns it into exit status 1.
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            stdout_closed()
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            stdout_closed()
            raise


@click.group(
    cls=_Cli,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--store",
    envvar="LAYERSEARCH_STORE",
    default=None,
    help="Store: a DuckDB file (default ./.layersearch/store.duckdb) or postgresql://… [env LAYERSEARCH_STORE]",
)
@click.option(
    "--embedder",
    envvar="LAYERSEARCH_EMBEDDER",
    default=None,
    help="Dense channel: local (the default once installed) | local:<model> | "
    "litellm:<model> | fake | none [env LAYERSEARCH_EMBEDDER]",
)
@click.option(
    "--config",
    "config_path",
    envvar="LAYERSEARCH_CONFIG",
    default=None,
    help="Settings file (default ./layersearch.toml when present) [env LAYERSEARCH_CONFIG]",
)
@click.option("-v", "--verbose", is_flag=True, help="Log progress and details to stderr.")
@click.version_option(package_name="layersearch")
@click.pass_context
def main(
    ctx: click.Context,
    store: str | None,
    embedder: str | None,
    config_path: str | None,
    verbose: bool,
) -> None:
    """Find the right semantic-layer context before writing a query."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    ctx.obj = Ctx(store, verbose, embedder, config_path)
