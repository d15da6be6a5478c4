"""Tuning: the session that runs the pipeline, and the ``@autotune`` decorator with its dispatch."""
