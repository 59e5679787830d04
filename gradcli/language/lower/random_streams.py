"""JAX's default generator (threefry2x32 with jax_threefry_partitionable, JAX's default since
0.5) rewritten in NumPy, bit for bit: keys from seeds, split, fold_in, random bits and the bits'
floats. Pure functions of uint32 arrays; no gradcli import."""
from __future__ import annotations

import math

import numpy as np

_U32 = np.uint32
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotate_left(x: np.ndarray, d: int) -> np.ndarray:
    return (x << _U32(d)) | (x >> _U32(32 - d))


def threefry2x32(k1, k2, x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Threefry-2x32 hash of the counts (x1, x2) under the key (k1, k2): JAX's 20 rounds."""
    k1, k2 = _U32(k1), _U32(k2)
    ks = (k1, k2, k1 ^ k2 ^ _U32(0x1BD11BDA))
    with np.errstate(over="ignore"):
        a, b = np.asarray(x1, _U32) + ks[0], np.asarray(x2, _U32) + ks[1]
        for group in range(5):
            for r in _ROTATIONS[group % 2]:
                a = a + b
                b = _rotate_left(b, r) ^ a
            a = a + ks[(group + 1) % 3]
            b = b + ks[(group + 2) % 3] + _U32(group + 1)
    return a, b


def key_from_seed(seed: int) -> np.ndarray:
    """jax.random.PRNGKey(seed): the seed's high and low 32 bits (0 <= seed < 2**63)."""
    return np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=_U32)


def _counts(shape: tuple) -> tuple[np.ndarray, np.ndarray]:
    """JAX's iota_2x32_shape: a uint64 iota of the shape, as its high and low words."""
    flat = np.arange(math.prod(shape), dtype=np.uint64).reshape(shape)
    return (flat >> np.uint64(32)).astype(_U32), (flat & np.uint64(0xFFFFFFFF)).astype(_U32)


def split(key: np.ndarray, shape: tuple) -> np.ndarray:
    """jax.random.split(key, shape): keys of that shape (the foldlike split), (*shape, 2)."""
    high, low = _counts(shape)
    bits1, bits2 = threefry2x32(key[0], key[1], high, low)
    return np.stack([bits1, bits2], axis=-1)


def fold_in(key: np.ndarray, data: int) -> np.ndarray:
    """jax.random.fold_in(key, data): the hash of the count (0, data as uint32)."""
    bits1, bits2 = threefry2x32(key[0], key[1], np.zeros(1, _U32), np.array([data & 0xFFFFFFFF], _U32))
    return np.array([bits1[0], bits2[0]], dtype=_U32)


def random_bits(key: np.ndarray, width: int, shape: tuple) -> np.ndarray:
    """JAX's random bits of 32 or 64 bits (the partitionable stream)."""
    high, low = _counts(shape)
    bits1, bits2 = threefry2x32(key[0], key[1], high, low)
    if width == 64:
        return (bits1.astype(np.uint64) << np.uint64(32)) | bits2.astype(np.uint64)
    return bits1 ^ bits2


def uniform(key: np.ndarray, shape: tuple, dtype, minval, maxval) -> np.ndarray:
    """jax.random.uniform: the bits' floats in [1, 2) less 1, scaled and shifted in `dtype`,
    then raised to minval, as JAX computes them."""
    dtype = np.dtype(dtype)
    width, mantissa = (64, 52) if dtype == np.float64 else (32, 23)
    unsigned = np.uint64 if width == 64 else _U32
    bits = random_bits(key, width, shape)
    floats = ((bits >> unsigned(width - mantissa)) | np.array(1.0, dtype).view(unsigned)).view(dtype) - dtype.type(1.0)
    low, high = np.asarray(minval, dtype), np.asarray(maxval, dtype)
    span = (high - low).astype(dtype)
    if np.all(span == 1) and np.all(low == 0):
        return floats
    scaled = (_fma64 if dtype == np.float64 else _fma32)(floats, span, low)
    return np.maximum(low, scaled).astype(dtype)


def randint(key: np.ndarray, shape: tuple, minval, maxval, width: int = 32) -> np.ndarray:
    """jax.random.randint over int32 (int64 with x64): two streams of bits from a split key,
    combined modulo the span, as JAX does."""
    signed, unsigned = (np.int64, np.uint64) if width == 64 else (np.int32, _U32)
    info = np.iinfo(signed)
    lo_given, hi_given = np.asarray(minval, np.int64), np.asarray(maxval, np.int64)
    out_of_range = hi_given > info.max
    low = np.clip(lo_given, info.min, info.max).astype(signed)
    high = np.clip(hi_given, info.min, info.max).astype(signed)
    keys = split(key, (2,))
    higher, lower = random_bits(keys[0], width, shape), random_bits(keys[1], width, shape)
    with np.errstate(over="ignore"):
        span = (high.astype(np.int64) - low.astype(np.int64)).astype(unsigned)
        span = np.where(high <= low, unsigned(1), span)
        span = np.where(out_of_range & (high > low), span + unsigned(1), span).astype(unsigned)
        multiplier = (unsigned(2 ** (width // 2)) % span).astype(unsigned)
        multiplier = (multiplier * multiplier) % span
        offset = ((higher % span) * multiplier + (lower % span)) % span
        return (low + offset.astype(signed)).astype(signed)


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32 a * b + c rounded once, as XLA's CPU code (which fuses them) computes it: the product
    is exact in float64, the sum's float64 rounding error is found exactly (TwoSum) and decides
    the one case where rounding twice differs, a sum on a float32 midpoint."""
    a, b, c = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    product = a * b
    total = product + c
    virtual = total - product
    error = (product - (total - virtual)) + (c - virtual)
    rounded = total.astype(np.float32)
    other = np.nextafter(rounded, np.where(total > rounded, np.float32(np.inf), np.float32(-np.inf)))
    midpoint = (rounded.astype(np.float64) + other.astype(np.float64)) / 2 == total
    toward = np.where(error > 0, np.maximum(rounded, other), np.minimum(rounded, other))
    return np.where(midpoint & (error != 0) & (total != rounded), toward, rounded).astype(np.float32)


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float64 a * b + c rounded once (exact rationals: Python rounds their quotient correctly)."""
    from fractions import Fraction
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    out = [float(Fraction(x) * Fraction(y) + Fraction(z)) if np.isfinite(x * y + z) else x * y + z
           for x, y, z in zip(a.ravel().tolist(), b.ravel().tolist(), c.ravel().tolist())]
    return np.array(out, dtype=np.float64).reshape(a.shape)


def normal(key: np.ndarray, shape: tuple, dtype) -> np.ndarray | None:
    """jax.random.normal: sqrt(2) erf_inv(u), u uniform in (-1, 1). XLA's CPU erf_inv uses a log1p
    of its own, not matched bit for bit here: None (the caller refuses the draw)."""
    return None
