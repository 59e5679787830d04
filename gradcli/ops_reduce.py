"""The op table, continued: Reductions, scans and statistics.

Each op is one record registered with `gradcli.ops.register` (see gradcli/ops.py)."""
