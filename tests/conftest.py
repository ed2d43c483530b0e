"""Shared pytest configuration."""

# tests/scripts/ holds training scripts that test_cli.py runs in subprocesses;
# importing them (e.g. for --doctest-modules) would run them.
collect_ignore = ["scripts"]
