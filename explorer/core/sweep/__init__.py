"""Design-space sweeps: a grid of contexts x precisions x devices in few analysis passes, and its Pareto front."""
