"""The measures behind the claims' tests: the run's data -> a ``Result``."""
