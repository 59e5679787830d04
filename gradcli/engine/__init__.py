"""The engine: evaluating equations over a backend (NumPy, CuPy, Dask), fused where it pays."""
