"""The MCP server for agents: ``serve`` (stdio, or streamable HTTP)."""

from __future__ import annotations

import errno
import logging
import socket
import sys
from pathlib import Path

import click

from layersearch.cli.context import Ctx
from layersearch.cli.errors import handle_errors
from layersearch.cli.output import emit_json
from layersearch.errors import ConfigError


@click.command()
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: address to bind.")
@click.option(
    "--port", default=8765, show_default=True, type=click.IntRange(1, 65535), help="HTTP: port."
)
@click.option(
    "--token",
    envvar="LAYERSEARCH_TOKEN",
    default=None,
    help="HTTP: require 'Authorization: Bearer TOKEN' (needed for a non-loopback host) "
    "[env LAYERSEARCH_TOKEN]",
)
@click.option(
    "--models",
    "models_path",
    default=None,
    help="Load this semantic layer at start when the store is empty [env LAYERSEARCH_MODELS]",
)
@click.option(
    "--config",
    "config_path",
    default=None,
    help="Settings file (default ./layersearch.toml) [env LAYERSEARCH_CONFIG]",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Startup errors as a JSON object; with --http, the URL served as JSON on stdout.",
)
@click.pass_obj
@handle_errors
def serve(
    obj: Ctx,
    use_http: bool,
    host: str,
    port: int,
    token: str | None,
    models_path: str | None,
    config_path: str | None,
    as_json: bool,
) -> None:
    """Run the MCP server for agents (stdio, or --http).

    Logs go to stderr; on stdio, stdout carries only protocol."""
    from layersearch.config import load_settings

    settings = load_settings(config_path or obj.config).replace(
        store=obj.store,
        models=Path(models_path) if models_path else None,
        embedder=obj.embedder,
    )
    sock = None
    if use_http:
        from layersearch.config import check_token

        # Refused before the (slow) server import: a clear error, fast.
        check_token(host, token)
        # The port is taken now, before anything is said about serving: one in use is an
        # error naming it, not uvicorn's "[Errno 98]" after "serving MCP at …".
        sock = listen_on(host, port)
    from layersearch import server

    mcp_server = server.create_server(settings)
    if use_http:
        url = server.http_url(host, port)
        if as_json:
            emit_json({"transport": "streamable-http", "url": url})
            sys.stdout.flush()
        else:
            click.echo(f"serving MCP at {url} (Ctrl-C to stop)", err=True)
        server.run_http(
            mcp_server,
            host=host,
            port=port,
            token=token,
            log_level="info" if obj.verbose else "warning",
            sock=sock,
        )
    else:
        source = click.get_current_context().get_parameter_source("token")
        if token and source == click.core.ParameterSource.COMMANDLINE:
            logging.getLogger("layersearch.cli").warning("--token applies to --http only; ignored")
        server.run_stdio(mcp_server)


def listen_on(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` as uvicorn binds one (IPv6 for an address with
    ``:``, SO_REUSEADDR), for the server to listen on; a port another program holds, or
    one this user may not bind, is an error saying so."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is taken: another program is listening there; stop "
                "it or pass another --port"
            ) from None
        if exc.errno == errno.EACCES:
            raise ConfigError(
                f"no permission to listen on port {port} (ports below 1024 need root); "
                "pass --port 1024 or above"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock
