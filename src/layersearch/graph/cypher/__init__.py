"""layersearch.graph.cypher"""
