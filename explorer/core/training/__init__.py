"""Training: work, memory and step time of training or fine-tuning a model on a system (docs/training.md)."""
