"""Input and output files: arrays read from disk, values written whole."""
