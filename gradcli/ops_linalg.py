"""The op table, continued: Linear algebra.

Each op is one record registered with `gradcli.ops.register` (see gradcli/ops.py)."""
