"""Adapters that run other frameworks' compaction through the harness's strategy seam."""
