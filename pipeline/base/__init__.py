"""Leaves every layer shares: errors, output, seeds, statistics, conventions, code identity; imports nothing above."""
