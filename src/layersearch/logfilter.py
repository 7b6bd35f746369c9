"""What a server's log may hold: no credentials, and one line (not a traceback) for a
client that went away before its request was read.

:func:`install` puts :class:`LogHygiene` on every handler that exists (the root's, and
uvicorn's own once its configuration has run) and on the loggers of the MCP SDK's
HTTP transport, which logs a client's disconnect with ``logger.exception``.
"""

from __future__ import annotations

import logging

from layersearch.errors import mask_secrets

__all__ = ["LogHygiene", "install"]

#: the loggers that report a request whose client disconnected mid-read
_TRANSPORT_LOGGERS = ("mcp.server.streamable_http", "mcp.server.streamable_http_manager")


def _disconnected(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what it was raised from) is starlette's ``ClientDisconnect``: the
    client closed the connection while its request body was being read."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if type(exc).__name__ == "ClientDisconnect" and type(exc).__module__.startswith(
            "starlette"
        ):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class LogHygiene(logging.Filter):
    """Rewrites each record before any handler formats it: credentials masked in its
    message and traceback (:func:`layersearch.errors.mask_secrets`); a client's disconnect
    made one warning line without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_layersearch_clean", False):
            return True
        record._layersearch_clean = True
        exc = record.exc_info[1] if record.exc_info else None
        if _disconnected(exc):
            said = record.getMessage()
            record.msg = "client disconnected before its request was read (%s); nothing answered"
            record.args = (said,)
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            return True
        message = record.getMessage()
        clean = mask_secrets(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = mask_secrets(logging.Formatter().formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = mask_secrets(record.stack_info)
        return True


_FILTER = LogHygiene()


def install() -> None:
    """:class:`LogHygiene` on every handler of every logger configured so far, and on the
    MCP HTTP transport's loggers (their records reach Python's last-resort handler too
    when no handler is configured)."""
    loggers = [logging.getLogger()] + [
        lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)
    ]
    for lg in loggers:
        for handler in lg.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)
    for name in _TRANSPORT_LOGGERS:
        lg = logging.getLogger(name)
        if _FILTER not in lg.filters:
            lg.addFilter(_FILTER)
