"""Ground truth: annotated documents (JSON, brat, BioC), Voronoi territories and chunk metrics."""
