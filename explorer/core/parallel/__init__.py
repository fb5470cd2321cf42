"""Many devices: collectives on the link they cross, parallel layouts that shard the work table, the system pass."""
