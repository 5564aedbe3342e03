"""Files: atomic writes, checkpoints."""
