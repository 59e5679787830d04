"""Insight: Jacobians, Hessians, gradient checks and the program printer."""
