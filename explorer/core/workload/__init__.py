"""Workloads: models and their layers, the counting conventions, and the templates."""
