"""Experiments built from stages: the privacy-utility sweep (`ppt eval sweep`), its corpora and plots."""
