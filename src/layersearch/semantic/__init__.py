"""layersearch.semantic"""
