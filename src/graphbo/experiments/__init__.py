"""Experiments: resumable runs, method comparisons and reports."""
