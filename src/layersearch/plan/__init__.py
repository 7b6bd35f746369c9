"""What a search answer carries for an agent beside its ranked hits: physical names,
a query plan for grouped questions, and a warning when nothing matches well.

It works on the answer at the service boundary (``api.Layersearch``): the ranking
itself is not changed here.
"""
