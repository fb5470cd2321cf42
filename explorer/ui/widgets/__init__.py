"""Small widgets shared by the UI (unit-checked quantity fields...)."""
