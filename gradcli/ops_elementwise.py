"""The op table, continued: Elementwise functions (trigonometric, hyperbolic, exponential and logarithmic families, SciPy's special functions) and neural-network activations and losses.

Each op is one record registered with `gradcli.ops.register` (see gradcli/ops.py)."""
