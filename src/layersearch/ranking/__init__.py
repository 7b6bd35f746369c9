"""layersearch.ranking"""
