"""Wiring of the stages: concurrency, progress and the public ``extract`` entry point."""
