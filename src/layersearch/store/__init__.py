"""layersearch.store"""
