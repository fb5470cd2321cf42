"""The catalog browser: a dock with a filterable device table, a detail pane and the device editor."""
