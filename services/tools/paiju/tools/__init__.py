"""Build-time tools of the gRPC contract: they run from the Makefile, never in a service."""
