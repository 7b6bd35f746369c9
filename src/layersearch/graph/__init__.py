"""layersearch.graph"""
