"""Stops with sys.exit(3)."""

import sys

print("before exit")
sys.exit(3)
