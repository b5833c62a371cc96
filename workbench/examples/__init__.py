"""Bundled example graphs, used by the README's quick start and (later) the CLI."""
