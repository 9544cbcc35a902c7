"""Components: every spaCy factory of the package (one module each), their shared base and settings."""
