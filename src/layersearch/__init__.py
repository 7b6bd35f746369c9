"""layersearch: the search layer analytics agents call before they write a query."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
