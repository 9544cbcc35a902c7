"""Embedders: sentence-transformers, static and transformer-listener models behind one interface."""
