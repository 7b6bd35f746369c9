"""layersearch.corpora"""
