"""layersearch.embed"""
