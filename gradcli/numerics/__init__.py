"""Numerics: diagnostics of non-finite and inexact values, and the fixes proven on the user's data."""
