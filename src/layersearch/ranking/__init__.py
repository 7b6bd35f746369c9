"""The ranking core: pure functions over documents (id, kind, fields, tags).

No store, no graph, no mcp: see DESIGN.md's dependency direction.
"""
