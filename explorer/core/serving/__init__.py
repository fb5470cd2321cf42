"""Serving under load (issue 19): workload, replica memory, step-time surface, continuous batching (docs/serving.md)."""
