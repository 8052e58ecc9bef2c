"""Developer tools: the one-machine stack of `make run`."""
