"""layersearch.semantic.importers"""
