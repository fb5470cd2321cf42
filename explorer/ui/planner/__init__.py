"""The procurement planner panel (issue 6)."""
