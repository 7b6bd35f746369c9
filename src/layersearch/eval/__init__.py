"""layersearch.eval"""
