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
    """float64 a * b + c rounded once: the product split exactly in two (Dekker), added to c
    exactly (TwoSum), the low parts summed rounding to odd, then one rounding to nearest
    (Boldo and Melquiond's emulation of a fused multiply-add)."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    with np.errstate(all="ignore"):
        high, low = _two_product(a, b)
        total, rest = _two_sum(c, high)
        near, error = _two_sum(rest, low)
        odd = np.where((error != 0) & ((near.view(np.int64) & 1) == 0),
                       np.nextafter(near, np.where(error > 0, np.inf, -np.inf)), near)
        return np.where(np.isfinite(high) & np.isfinite(total), total + odd, a * b + c)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    total = a + b
    virtual = total - a
    return total, (a - (total - virtual)) + (b - virtual)


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    def halves(x):
        scaled = 134217729.0 * x  # (2**27 + 1: Veltkamp's split into two 26-bit halves)
        high = scaled - (scaled - x)
        return high, x - high

    product = a * b
    (a1, a2), (b1, b2) = halves(a), halves(b)
    return product, ((a1 * b1 - product) + a1 * b2 + a2 * b1) + a2 * b2


def normal(key: np.ndarray, shape: tuple, dtype) -> np.ndarray:
    """jax.random.normal: sqrt(2) erf_inv(u), u uniform in (-1, 1), with XLA's CPU erf_inv,
    log1p and log (float32), or its float64 erf_inv and log1p with C's log, their multiply-adds
    fused."""
    dtype = np.dtype(dtype)
    low = np.nextafter(dtype.type(-1.0), dtype.type(0.0))
    u = np.atleast_1d(uniform(key, shape, dtype, low, dtype.type(1.0)))
    if dtype == np.float64:
        return (np.sqrt(2.0) * _erf_inv64(u)).reshape(shape)
    return (np.float32(np.sqrt(2)) * _erf_inv32(u)).astype(np.float32).reshape(shape)


_F32 = np.float32
# XLA's erf_inv for float32 (Giles' approximation): coefficients for w < 5 and w >= 5
_ERF_INV_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941)
_ERF_INV_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682)
# XLA's log1p below sqrt(2) - 1: Cephes' rational function
_LOG1P_NUMERATOR = (4.5270000862445199635215E-5, 4.9854102823193375972212E-1, 6.5787325942061044846969E0,
                    2.9911919328553073277375E1, 6.0949667980987787057556E1, 5.7112963590585538103336E1,
                    2.0039553499201281259648E1)
_LOG1P_DENOMINATOR = (1.0, 1.5062909083469192043167E1, 8.3047565967967209469434E1, 2.2176239823732856465394E2,
                      3.0909872225312059774938E2, 2.1642788614495947685003E2, 6.0118660497603843919306E1)
# the log of XLA's CPU code (Cephes' single-precision log)
_LOG = (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1, -1.6668057665E-1,
        2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1)


def _erf_inv32(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        w = -_log1p32((x * -x).astype(_F32))
        small = w < _F32(5.0)
        w = np.where(small, (w - _F32(2.5)).astype(_F32), (np.sqrt(w).astype(_F32) - _F32(3.0)).astype(_F32))
        p = np.where(small, _F32(_ERF_INV_SMALL[0]), _F32(_ERF_INV_LARGE[0])).astype(_F32)
        for low, high in zip(_ERF_INV_SMALL[1:], _ERF_INV_LARGE[1:]):
            p = _fma32(p, w, np.where(small, _F32(low), _F32(high)))
        return np.where(np.abs(x) == 1, x * _F32(np.inf), (p * x).astype(_F32)).astype(_F32)


def _log1p32(x: np.ndarray) -> np.ndarray:
    def polynomial(coefficients):
        value = np.zeros_like(x)
        for c in coefficients:
            value = _fma32(value, x, _F32(c))
        return value

    squared = (x * x).astype(_F32)
    ratio = (polynomial(_LOG1P_NUMERATOR) / polynomial(_LOG1P_DENOMINATOR)).astype(_F32)
    small = (x + _fma32(_F32(-0.5), squared, ((x * squared).astype(_F32) * ratio).astype(_F32))).astype(_F32)
    return np.where(np.abs(x) < _F32(0.41421356237309504880), small, _log32((x + _F32(1.0)).astype(_F32)))


def _log32(v: np.ndarray) -> np.ndarray:
    """log of positive float32 numbers: mantissa in [sqrt(1/2), sqrt(2)) and exponent, a polynomial."""
    x = np.maximum(v.astype(_F32), _F32(1.17549435e-38))
    bits = x.view(_U32)
    exponent = (bits >> _U32(23)).astype(np.int32) - 0x7F
    x = ((bits & _U32(0x807FFFFF)) | _F32(0.5).view(_U32)).view(_F32)
    e = (exponent.astype(_F32) + _F32(1.0)).astype(_F32)
    below = x < _F32(0.707106781186547524)
    e = (e - np.where(below, _F32(1.0), _F32(0.0))).astype(_F32)
    x = ((x - _F32(1.0)).astype(_F32) + np.where(below, x, _F32(0.0))).astype(_F32)
    squared = (x * x).astype(_F32)
    cubed = (squared * x).astype(_F32)
    c = [_F32(p) for p in _LOG]
    y, y1, y2 = _fma32(c[0], x, c[1]), _fma32(c[3], x, c[4]), _fma32(c[6], x, c[7])
    y, y1, y2 = _fma32(y, x, c[2]), _fma32(y1, x, c[5]), _fma32(y2, x, c[8])
    y = _fma32(_fma32(y, cubed, y1), cubed, y2)
    y = _fma32(y, cubed, (e * _F32(-2.12194440e-4)).astype(_F32))
    x = (_fma32(-squared, _F32(0.5), x) + y).astype(_F32)
    return _fma32(e, _F32(0.693359375), x)


class TorchGenerator:
    """PyTorch's CPU generator after torch.manual_seed(seed): mt19937 seeded with the seed's low 32
    bits (NumPy's MT19937 is the same engine), and the Box-Muller sample PyTorch keeps for its
    next normal draw."""

    def __init__(self, seed: int):
        self.engine = np.random.MT19937()
        self.engine._legacy_seeding(seed & 0xFFFFFFFF)  # (init_genrand(seed), as std::mt19937(seed))
        self.cached_normal: float | None = None

    def random(self, count: int) -> np.ndarray:
        """`count` 32-bit outputs of the engine, in order."""
        return np.asarray(self.engine.random_raw(count), dtype=np.uint64)

    def uniform(self, count: int, dtype) -> np.ndarray:
        """torch.rand: 24 random bits of one output (float32), 53 of two (float64: first output high)."""
        if np.dtype(dtype) == np.float32:
            return ((self.random(count) & np.uint64(0xFFFFFF)) * 2.0 ** -24).astype(np.float32)
        pairs = self.random(2 * count).reshape(count, 2)
        bits = ((pairs[:, 0] << np.uint64(32)) | pairs[:, 1]) & np.uint64((1 << 53) - 1)
        return bits.astype(np.float64) * 2.0 ** -53

    def integers(self, count: int, low: int, high: int) -> np.ndarray:
        """torch.randint: low + one output modulo the span (spans below 2**32)."""
        return (self.random(count) % np.uint64(high - low)).astype(np.int64) + low

    def normal(self, count: int, mean: float, std: float, dtype=np.float32) -> np.ndarray:
        """torch.randn / torch.normal of `count` elements, by PyTorch's three paths: fewer than 16,
        one at a time (_serial_normal); 16 or more in float32, its AVX2 code (_filled_avx2); 16 or
        more in float64, blocks of 16 Box-Muller pairs (_filled_double)."""
        if count < 16:
            return self._serial_normal(count, mean, std).astype(dtype)
        fill = _filled_avx2 if np.dtype(dtype) == np.float32 else _filled_double
        data = self.uniform(count, dtype)
        blocks = count // 16 * 16
        data[:blocks] = fill(data[:blocks].reshape(-1, 16), mean, std).reshape(-1)
        if count % 16:  # (PyTorch draws 16 more and recomputes the last 16 values)
            data[count - 16:] = fill(self.uniform(16, dtype).reshape(1, 16), mean, std).reshape(-1)
        return data

    def _serial_normal(self, count: int, mean: float, std: float) -> np.ndarray:
        """PyTorch's serial normal: Box-Muller in double from two 53-bit uniforms, r cos(theta)
        now and r sin(theta) kept for the next draw; C's libm, as Python's math module calls it."""
        out = np.empty(count, dtype=np.float64)
        for k in range(count):
            if self.cached_normal is not None:
                value, self.cached_normal = self.cached_normal, None
            else:
                u1, u2 = (float(u) for u in self.uniform(2, np.float64))
                radius = math.sqrt(-2.0 * math.log1p(-u2))
                theta = 2.0 * math.pi * u1
                self.cached_normal = radius * math.sin(theta)
                value = radius * math.cos(theta)
            out[k] = value * std + mean
        return out

    def permutation(self, n: int) -> np.ndarray:
        """torch.randperm(n): Fisher-Yates from the front, one output modulo what is left."""
        order = list(range(n))
        draws = self.random(max(n - 1, 0)).tolist()
        for i in range(n - 1):
            z = draws[i] % (n - i) + i
            order[i], order[z] = order[z], order[i]
        return np.array(order, dtype=np.int64)


def _filled_double(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    """PyTorch's normal_fill_16 in double, per block of 16 uniforms: u1 = 1 - the first 8, theta
    from the last 8; r cos(theta) std + mean (one fused multiply-add, as its AVX2 build computes
    it) into the first 8, r sin(theta) into the last 8."""
    out = np.empty_like(blocks)
    for b, row in enumerate(blocks.tolist()):
        for j in range(8):
            radius = math.sqrt(-2 * math.log(1 - row[j]))
            theta = 2.0 * math.pi * row[j + 8]
            out[b, j], out[b, j + 8] = radius * math.cos(theta), radius * math.sin(theta)
    return out if (std, mean) == (1.0, 0.0) else _fma64(out, np.float64(std), np.float64(mean))


def _filled_avx2(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    """PyTorch's normal_fill_16_AVX2 per block of 16 float32 uniforms, with its avx_mathfun log
    and sincos (Cephes' single-precision polynomials), each multiply feeding an add fused as GCC
    compiles them."""
    u1 = (_F32(1.0) - blocks[:, :8]).astype(_F32)
    radius = np.sqrt((_F32(-2.0) * _log256(u1)).astype(_F32)).astype(_F32)
    sine, cosine = _sincos256((_F32(2.0 * math.pi) * blocks[:, 8:]).astype(_F32))
    std, mean = _F32(std), _F32(mean)
    return np.concatenate([_fma32((radius * cosine).astype(_F32), std, mean),
                           _fma32((radius * sine).astype(_F32), std, mean)], axis=1)


def _log256(v: np.ndarray) -> np.ndarray:
    x = np.maximum(v.astype(_F32), _U32(0x00800000).view(_F32))
    bits = x.view(_U32)
    e = ((bits >> _U32(23)).astype(np.int32) - 0x7F).astype(_F32) + _F32(1.0)
    x = ((bits & _U32(0x807FFFFF)) | _F32(0.5).view(_U32)).view(_F32)
    below = x < _F32(0.707106781186547524)
    e = (e - np.where(below, _F32(1.0), _F32(0.0))).astype(_F32)
    x = ((x - _F32(1.0)).astype(_F32) + np.where(below, x, _F32(0.0))).astype(_F32)
    squared = (x * x).astype(_F32)
    y = np.full_like(x, _F32(_LOG[0]))
    for c in _LOG[1:]:
        y = _fma32(y, x, _F32(c))
    y = _fma32((y * x).astype(_F32), squared, (e * _F32(-2.12194440e-4)).astype(_F32))
    y = _fma32(-squared, _F32(0.5), y)
    return _fma32(e, _F32(0.693359375), (x + y).astype(_F32))


_SIN = (-1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1)
_COS = (2.443315711809948E-005, -1.388731625493765E-003, 4.166664568298827E-002)


def _sincos256(angle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """avx_mathfun's sincos256_ps: the angle reduced by pi/4 in three parts, then the sine's or
    the cosine's polynomial on each octant, with the octant's signs."""
    negative = np.signbit(angle)
    x = np.abs(angle).astype(_F32)
    octant = ((x * _F32(1.27323954473516)).astype(_F32).astype(np.int32) + 1) & ~1
    y = octant.astype(_F32)
    for part in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = _fma32(y, _F32(part), x)
    z = (x * x).astype(_F32)
    cos_poly = _fma32(_fma32(_F32(_COS[0]), z, _F32(_COS[1])), z, _F32(_COS[2]))
    cos_poly = _fma32((cos_poly * z).astype(_F32), z, -(z * _F32(0.5)).astype(_F32))
    cos_poly = (cos_poly + _F32(1.0)).astype(_F32)
    sin_poly = _fma32(_fma32(_F32(_SIN[0]), z, _F32(_SIN[1])), z, _F32(_SIN[2]))
    sin_poly = _fma32((sin_poly * z).astype(_F32), x, x)
    first = (octant & 2) == 0
    sine = np.where(first, sin_poly, cos_poly)
    cosine = np.where(first, cos_poly, sin_poly)
    sine = np.where(negative ^ ((octant & 4) != 0), -sine, sine).astype(_F32)
    cosine = np.where(((~(octant - 2)) & 4) != 0, -cosine, cosine).astype(_F32)
    return sine, cosine


def shuffled_indices(key: np.ndarray, n: int) -> np.ndarray:
    """JAX's _shuffle of arange(n): rounds of a stable sort by fresh 32-bit keys (as many rounds
    as JAX's heuristic asks, ceil(3 ln n / ln(2**32 - 1)))."""
    rounds = int(np.ceil(3 * np.log(max(1, n)) / np.log(np.iinfo(np.uint32).max)))
    order = np.arange(n)
    for _ in range(rounds):
        key, subkey = split(key, (2,))
        order = order[np.argsort(random_bits(subkey, 32, (n,)), kind="stable")]
    return order


# XLA's erf_inv for float64 (Giles' approximation): below w = 6.25, below 16, and beyond
_ERF_INV64 = (
    (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18, 1.115787767802518096e-17,
     -1.333171662854620906e-16, 2.0972767875968561637e-17, 6.6376381343583238325e-15, -4.0545662729752068639e-14,
     -8.1519341976054721522e-14, 2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
     1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
     -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352, -0.00074070253416626697512,
     -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356),
    (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
     1.5027403968909827627e-06, -4.013867526981545969e-06, 2.9234449089955446044e-06, 1.2475304481671778723e-05,
     -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
     0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066, -0.0037512085075692412107,
     0.005370914553590063617, 1.0052589676941592334, 3.0838856104922207635),
    (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09, -3.7894654401267369937e-09,
     7.6157012080783393804e-09, -1.4960026627149240478e-08, 2.9147953450901080826e-08, -6.7711997758452339498e-08,
     2.2900482228026654717e-07, -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
     7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
     4.8499064014085844221),
)


def _erf_inv64(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        w = -_log1p64(x * -x)
        first, second = w < 6.25, w < 16.0
        w = np.where(first, w - 3.125, np.where(second, np.sqrt(w) - 3.25, np.sqrt(w) - 5.0))
        tables = [(0.0,) * (23 - len(t)) + t for t in _ERF_INV64]  # (the shorter ones led by zeros)
        p = np.zeros_like(x)
        for a, b, c in zip(*tables):
            p = _fma64(p, w, np.where(first, a, np.where(second, b, c)))
        return np.where(np.abs(x) == 1, x * np.inf, p * x)


def _log1p64(x: np.ndarray) -> np.ndarray:
    def polynomial(coefficients):
        value = np.zeros_like(x)
        for c in coefficients:
            value = _fma64(value, x, np.float64(c))
        return value

    squared = x * x
    small = x + _fma64(-0.5, squared, (x * squared) * (polynomial(_LOG1P_NUMERATOR) / polynomial(_LOG1P_DENOMINATOR)))
    large = np.array([math.log(v) if v > 0 else -math.inf for v in (x + 1.0).ravel().tolist()]).reshape(x.shape)
    return np.where(np.abs(x) < 0.41421356237309504880, small, large)
