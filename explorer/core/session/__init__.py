"""The session: one frozen state, the commands that map it, the workspace that swaps it in and says what changed,
the results bundle of the state, and the project file (docs/architecture.md)."""
