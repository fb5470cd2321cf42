"""Hardware: devices, device files, the curated catalog files and the one list of device fields."""
