"""The op table, continued: Shape and array functions, constructors and indexing with constant integer arrays.

Each op is one record registered with `gradcli.ops.register` (see gradcli/ops.py)."""
