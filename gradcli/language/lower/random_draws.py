"""Seeded random draws, made as the program is read: the numbers the library's own generator
gives, bit for bit, placed in the graph as constants (no gradient flows to a draw).

- NumPy by NumPy itself: `np.random.seed(s)` then the module's functions (the global legacy
  RandomState, whose stream NumPy keeps frozen), `np.random.RandomState(s)` objects (autograd's
  `npr` is NumPy's), and `np.random.default_rng(s)` Generators (PCG64).
- JAX's keys (`jax.random.PRNGKey(s)`, `key`, `split`, `fold_in`) and samplers, by JAX's default
  generator (threefry2x32, partitionable) rewritten in NumPy (random_streams.py).
- PyTorch's CPU generator (`torch.manual_seed(s)`, mt19937) and its samplers (random_streams.py).

A draw happens where the program makes it, in program order: a loop's pass draws anew, a function
called twice draws twice. A stateful draw inside a function that JAX traces once but gradcli lowers
per call (a lax loop's body, vmap, a custom rule) is refused, as is a draw whose generator was
never seeded (the library's own start is not reproducible)."""
from __future__ import annotations

import math

import numpy as np

from gradcli.language import syntax as ast
from gradcli.language.dialects import split_spelling
from gradcli.language.lower import random_streams as streams
from gradcli.language.lower.transforms import _FINISH
from gradcli.language.lower.values import NONE, Literal, Text, TupleValue
from gradcli.limits import MAX_CONSTANT_ELEMENTS
from gradcli.ops import OPS



def bounded(lowering, shape, label: str, node) -> None:
    """Refuse a draw of more elements than the lowering makes for a constant (MAX_CONSTANT_ELEMENTS),
    before any is drawn."""
    count = math.prod(shape) if isinstance(shape, tuple) else shape
    if count > MAX_CONSTANT_ELEMENTS:
        raise lowering.error(f"{label}(): a draw of {count:,} numbers is more than the {MAX_CONSTANT_ELEMENTS:,} "
                             "gradcli makes while it reads a program: draw fewer, or give the values as a file", node.pos)

class NumpyGenerator:
    """A NumPy generator of the program: a RandomState (`legacy`) or a Generator, with its state."""

    __slots__ = ("generator", "legacy", "pos")

    def __init__(self, generator, legacy: bool, pos):
        self.generator, self.legacy, self.pos = generator, legacy, pos

    def refusal(self) -> str:
        kind = "np.random.RandomState" if self.legacy else "np.random.Generator"
        return f"this {kind} (made here) is not a number: call its methods, as in rs.normal(0.0, 1.0, 3)"


class JaxKey:
    """A JAX PRNG key (threefry2x32): its two uint32 words, `data` of shape (2,). A key is no
    array: it goes to jax.random's functions only."""

    __slots__ = ("data", "pos")

    def __init__(self, data: np.ndarray, pos):
        self.data, self.pos = data, pos

    @staticmethod
    def refusal() -> str:
        return ("this JAX key (made here) is not a number: gradcli follows keys apart from arrays, given to "
                "jax.random's functions (or split keys mapped over by jax.vmap) only; jax.random.key_data(key) gives "
                "its two words")


RANDOM_VALUES = (NumpyGenerator, JaxKey)

# NumPy's samplers: parameter names in order, each with how it is read ("size": None, an integer
# or a tuple of them; "float"/"int": a number or an array; "bool"; "pool": an integer or an array,
# which may be computed: the draw picks its rows, as NumPy does)
_SIZE = ("size", "size")
_LEGACY = {
    "standard_normal": (_SIZE,), "random": (_SIZE,), "random_sample": (_SIZE,), "ranf": (_SIZE,),
    "sample": (_SIZE,),
    "normal": (("loc", "float"), ("scale", "float"), _SIZE),
    "uniform": (("low", "float"), ("high", "float"), _SIZE),
    "randint": (("low", "int"), ("high", "int"), _SIZE),
    "choice": (("a", "pool"), _SIZE, ("replace", "bool"), ("p", "float")),
    "permutation": (("x", "pool"),),
}
_GENERATOR = {
    "standard_normal": (_SIZE,), "random": (_SIZE,),
    "normal": _LEGACY["normal"], "uniform": _LEGACY["uniform"],
    "integers": (("low", "int"), ("high", "int"), _SIZE, ("endpoint", "bool")),
    "choice": _LEGACY["choice"], "permutation": _LEGACY["permutation"],
}
_DIMS = ("randn", "rand")  # np.random.randn(2, 3): the shape as separate integers
# the work items after which gradcli lowers a function's body more often (or otherwise) than
# Python runs it: a lax loop's body, vmap's rows, a custom rule, gradcheck, tree_map's leaves
_REPLAYED = frozenset({"loop", "stack", "custom", "gradcheck", "tree", "call", "linear"})
_JAX_CALLS = frozenset({"random.PRNGKey", "random.key", "random.split", "random.fold_in", "random.normal",
                        "random.uniform", "random.randint", "random.bernoulli", "random.key_data",
                        "random.permutation", "random.choice"})
NUMPY_CALLS = frozenset({"random.seed", "random.RandomState", "random.default_rng", "random.shuffle"} | {
    f"random.{name}" for name in (*_LEGACY, *_DIMS)})


_JAX_PARAMS = {
    "PRNGKey": ("seed", "impl"), "key": ("seed", "impl"), "key_data": ("keys",), "fold_in": ("key", "data"),
    "split": ("key", "num"), "normal": ("key", "shape", "dtype"),
    "uniform": ("key", "shape", "dtype", "minval", "maxval"),
    "randint": ("key", "shape", "minval", "maxval", "dtype"), "bernoulli": ("key", "p", "shape", "mode"),
    "permutation": ("key", "x", "axis", "independent"), "choice": ("key", "a", "shape", "replace", "p", "axis", "mode"),
}
_JAX_REQUIRED = {"fold_in": 2, "randint": 4, "permutation": 2, "choice": 2}


TORCH_CALLS = frozenset({"manual_seed", "rand", "randn", "randint", "normal", "rand_like", "randn_like", "randperm"})


def reproduced(library: str, bare: str) -> bool:
    """Whether gradcli reproduces this library call of a random module (else it is refused)."""
    return (library == "numpy" and bare in NUMPY_CALLS) or (library == "jax" and bare in _JAX_CALLS) or (
        library == "torch" and bare in TORCH_CALLS)


class TorchDraws:
    """Part of the lowering (through RandomDraws): PyTorch's CPU generator, once the program calls
    torch.manual_seed (`torch_generator`, None before), and its draws."""

    # the generators' state as the program sets it (the last two by settings.py: torch.set_default_dtype,
    # jax.config.update("jax_enable_x64", True)); RandomDraws' numpy_global too
    torch_generator = None
    numpy_global = None
    torch_default_float = "float32"
    jax_x64 = False

    def torch_random(self, name: str, node, values: list, scope, work: list):
        """torch.manual_seed and the CPU generator's draws (random_streams.TorchGenerator)."""
        label = f"torch.{name}"
        args, keywords = values[:len(node.args)], {kw.name: v for kw, v in zip(node.keywords, values[len(node.args):])}
        unknown = sorted(set(keywords) - {"size", "dtype", "low", "high", "mean", "std", "seed", "input", "n", "device"})
        if unknown:
            raise self.error(f"{label}() takes no '{unknown[0]}' here (gradcli reproduces the default generator's "
                             "draws on the CPU)", node.pos)
        device = keywords.get("device", NONE)
        if not on_cpu(device):
            raise self.error(f"{label}(device=...): gradcli reproduces the CPU generator's draws (a GPU's generator "
                             "is another, Philox); draw on the CPU (device='cpu')", node.pos)
        if name == "manual_seed":
            seed = self.known_int(args[0] if args else keywords.get("seed", NONE), f"the seed of {label}()", node.pos)
            if not 0 <= seed < 2 ** 64:
                raise self.error(f"{label}(): gradcli reproduces seeds from 0 to 2**64 - 1, got {seed}", node.pos)
            self.torch_generator = streams.TorchGenerator(seed)
            return NONE
        generator = self.torch_generator
        if generator is None:
            raise self.error(unseeded(label, "torch.manual_seed(0)"), node.pos)
        self._refuse_replayed(work, node, scope)
        dtype = self._torch_dtype(keywords.get("dtype"), label, node)
        if name in ("rand_like", "randn_like"):
            shape = self.shape_of(args[0] if args else keywords.get("input", NONE))
            name = name[:-len("_like")]
        elif name == "randint":
            bounds, shape = self._torch_randint_arguments(args, keywords, label, node)
        elif name == "normal":
            mean, std, shape = self._torch_normal_arguments(args, keywords, label, node)
        elif name == "randperm":
            n = self.known_int(args[0] if args else keywords.get("n", NONE), f"n of {label}()", node.pos)
            bounded(self, n, label, node)
            return self._placed(generator.permutation(n), node, scope, "torch")
        else:
            shape = self._torch_size(args or [keywords.get("size", TupleValue([], node.pos))], label, node)
        count = math.prod(shape)
        bounded(self, count, label, node)
        if name == "rand":
            drawn = generator.uniform(count, dtype)
        elif name == "randint":
            drawn = generator.integers(count, *bounds)
        else:
            drawn = generator.normal(count, *((mean, std) if name == "normal" else (0.0, 1.0)), dtype)
        return self._placed(np.asarray(drawn).astype(dtype if name != "randint" else np.float64).reshape(shape),
                            node, scope, "torch")

    def _torch_dtype(self, value, label: str, node, made: str = "draws"):
        if value is None or value is NONE:  # PyTorch's default type (torch.set_default_dtype: settings.py)
            return np.dtype(np.float64 if self.torch_default_float == "float64" else np.float32)
        name = value.value if isinstance(value, Text) else None
        if name in ("float32", "float", "float64", "double"):
            return np.dtype(np.float64 if name in ("float64", "double") else np.float32)
        raise self.error(f"{label}(dtype=...): gradcli reproduces float32 and float64 {made}", node.pos)

    def _torch_size(self, given: list, label: str, node) -> tuple:
        """The sizes written apart (`torch.randn(2, 3)`) or as one tuple (`torch.randn((2, 3))`)."""
        if len(given) == 1 and isinstance(given[0], TupleValue) or (
                len(given) == 1 and isinstance(given[0], Literal) and given[0].value.ndim == 1):
            size = self._argument(given[0], "size", "size", label, node)
            return (size,) if isinstance(size, int) else tuple(size)
        return tuple(self.known_int(v, f"the size of {label}()", node.pos) for v in given)

    def _torch_randint_arguments(self, args: list, keywords: dict, label: str, node):
        """randint(high, size) or randint(low, high, size): the bounds and the shape."""
        names = ("high", "size") if len(args) == 2 else ("low", "high", "size")
        given = {**dict(zip(names, args)), **keywords}
        if "high" not in given or "size" not in given:
            raise self.error(f"{label}(low=0, high, size) needs high and size", node.pos)
        low = self.known_int(given.get("low", Literal(np.float64(0), node.pos)), f"low of {label}()", node.pos)
        high = self.known_int(given["high"], f"high of {label}()", node.pos)
        if not 0 < high - low < 2 ** 32:
            raise self.error(f"{label}(): gradcli reproduces spans from 1 to 2**32 - 1 (high > low), got "
                             f"[{low}, {high})", node.pos)
        return (low, high), self._torch_size([given["size"]], label, node)

    def _torch_normal_arguments(self, args: list, keywords: dict, label: str, node):
        given = {**dict(zip(("mean", "std", "size"), args)), **keywords}
        if "size" not in given:
            raise self.error(f"{label}(mean, std) of tensors is not reproduced by gradcli: give numbers and size=, "
                             "as in torch.normal(0.0, 1.0, size=(3,))", node.pos)
        mean, std = (float(self._argument(given.get(k, Literal(np.float64(d), node.pos)), k, "float", label, node))
                     for k, d in (("mean", 0.0), ("std", 1.0)))
        if std < 0:
            raise self.error(f"{label}(): std must be >= 0 (PyTorch's RuntimeError), got {std}", node.pos)
        return mean, std, self._torch_size([given["size"]], label, node)



class RandomDraws(TorchDraws):
    """Part of the lowering (gradcli.language.lower): the program's generators and their draws.
    `numpy_global`: NumPy's global RandomState once the program seeds it (None before)."""

    # (RandomDraws stands first among the lowering's parts: these two see a call or a value before
    # GradientCalls and Statements do, and hand the rest on)
    def call_gradient_api(self, node: ast.Call, values: list, scope, work: list):
        """A method of a program's generator or key (`rs.randn(3)`), else GradientCalls'."""
        if node.method and values and isinstance(values[0], RANDOM_VALUES):
            return self.random_method(values[0], node, values[1:], scope, work)
        return super().call_gradient_api(node, values, scope, work)

    def refuse_as_number(self, value):
        """A generator or a key used as a number: what it is and what to write; else Statements'."""
        if isinstance(value, RANDOM_VALUES):
            raise self.error(value.refusal(), value.pos)
        return super().refuse_as_number(value)

    def random_draw(self, node: ast.Call, values: list, scope, work: list):
        """A call of a library's random module (np.random.*, jax.random.*)."""
        library, bare = split_spelling(self.spelled(node.func))
        name = bare.partition("random.")[2]
        if library == "jax":
            return self.jax_random(name, node, values, scope)
        if library == "torch" and bare in TORCH_CALLS:
            return self.torch_random(bare, node, values, scope, work)
        if library != "numpy":
            raise self.error(f"{node.func}() draws random numbers from {library}'s generator, which gradcli does not "
                             "reproduce: write the values in the program, or make the value an input and give it "
                             "with --set", node.pos)
        args, keywords = values[:len(node.args)], {kw.name: v for kw, v in zip(node.keywords, values[len(node.args):])}
        if name == "seed":
            seed = self._seed(args[0] if args else keywords.get("seed", NONE), node)
            self.numpy_global = NumpyGenerator(np.random.RandomState(seed), True, node.pos)
            return NONE
        if name in ("RandomState", "default_rng"):
            seed = self._seed(args[0] if args else keywords.get("seed", NONE), node)
            made = np.random.RandomState(seed) if name == "RandomState" else np.random.default_rng(seed)
            return NumpyGenerator(made, name == "RandomState", node.pos)
        generator = self.numpy_global
        if generator is None:
            raise self.error(unseeded(f"np.random.{name}", "np.random.seed(0)"), node.pos)
        if name == "shuffle":
            return self.numpy_shuffle(generator, node, node.args[:1], args, scope, work)
        return self.numpy_sample(generator, name, node, args, keywords, scope, work)

    def random_method(self, receiver, node: ast.Call, values: list, scope, work: list):
        """`rs.randn(3)`, `rng.normal(0, 1, 5)`: a method of a program's NumPy generator (a key has
        none)."""
        if not isinstance(receiver, NumpyGenerator):
            raise self.error(f"a JAX key has no method .{node.func}(): give it to jax.random's functions", node.pos)
        args = values[:len(node.args) - 1]
        keywords = {kw.name: v for kw, v in zip(node.keywords, values[len(node.args) - 1:])}
        if node.func == "seed" and receiver.legacy:
            receiver.generator = np.random.RandomState(self._seed(args[0] if args else NONE, node))
            return NONE
        if node.func == "shuffle":
            return self.numpy_shuffle(receiver, node, node.args[1:2], args, scope, work)
        return self.numpy_sample(receiver, node.func, node, args, keywords, scope, work)

    # ------------------------------------------------------------------ NumPy
    def _seed(self, value, node) -> int:
        if value is NONE:
            raise self.error(f"{node.func}() without a seed draws from the operating system's entropy, which gradcli "
                             f"cannot reproduce: give a seed, as in {node.func}(0)", node.pos)
        seed = self.known_int(value, f"the seed of {node.func}()", node.pos)
        if not 0 <= seed < 2 ** 32:
            raise self.error(f"{node.func}(): the seed must be between 0 and 2**32 - 1 (NumPy's ValueError), "
                             f"got {seed}", node.pos)
        return seed

    def note_jitted(self, fn):
        """`jax.jit(f)`: f's Python runs once per compilation (not at each call), so a stateful
        draw in it is refused; f itself is the value (compiling changes no number)."""
        self.jitted_functions = getattr(self, "jitted_functions", frozenset()) | {getattr(fn, "name", None)}
        return fn

    def _jitted(self, scope) -> bool:
        """Whether a function being expanded is compiled by jax.jit (called so, or decorated)."""
        jitted = getattr(self, "jitted_functions", frozenset())
        for name in scope.active:
            fn = self.globals.get(name)
            decorators = fn.decorators if isinstance(fn, ast.FuncDef) else ()
            spelled = [self.spelled(getattr(d, "func", None) or getattr(d, "id", "")) for d in decorators] + [
                self.spelled(getattr(a, "id", "")) for d in decorators for a in getattr(d, "args", ())]
            if name in jitted or any(s.endswith("jit") for s in spelled):
                return True
        return False

    def _refuse_replayed(self, work: list, node, scope) -> None:
        """A stateful draw where gradcli lowers the body more often than Python runs it is refused."""
        if self._jitted(scope):
            raise self.error(f"{node.func}() draws from a generator's state inside a function jax.jit compiles: JAX runs "
                             "its Python once per compilation, not at each call, so gradcli cannot tell which draws "
                             "happen; draw outside it and pass the values in", node.pos)
        if any(item[0] == _FINISH and item[1][0] in _REPLAYED for item in work):
            raise self.error(f"{node.func}() draws from a generator's state inside a function that JAX traces once but "
                             "gradcli expands at each use (a lax loop's body, vmap, a custom rule): the draws would come "
                             "in another order; draw before the call and pass the values in", node.pos)

    def numpy_shuffle(self, generator: NumpyGenerator, node, written: list, args: list, scope, work):
        """`np.random.shuffle(x)`, `rng.shuffle(x)`: NumPy shuffles x in place along its first axis,
        with the draws of permutation(x); the name x is bound to the shuffled rows (None is the
        call's value, as NumPy's)."""
        if len(args) != 1 or not written or not isinstance(written[0], ast.Name) or "." in written[0].id:
            raise self.error(f"{node.func}(x) shuffles x in place: give it one array named in the program", node.pos)
        name = written[0].id
        shuffled = self.numpy_sample(generator, "permutation", node, args, {}, scope, work)
        if scope.locals is not None and scope.lookup(name) is not None:
            holder = scope
            while name not in holder.locals:
                holder = holder.parent
            holder.locals[name] = shuffled
        else:
            self.globals[name] = shuffled
            self.graph.names[name] = shuffled
        return NONE

    def numpy_sample(self, generator: NumpyGenerator, name: str, node, args: list, keywords: dict, scope, work):
        label = f"np.random.{name}" if generator is self.numpy_global else f"{node.func}"
        table = _LEGACY if generator.legacy else _GENERATOR
        if name not in table and not (generator.legacy and name in _DIMS):
            kind = "RandomState" if generator.legacy else "Generator"
            known = sorted(set(table) | (set(_DIMS) if generator.legacy else set()))
            raise self.error(f"{label}() is not reproduced by gradcli (a NumPy {kind}'s draws it reproduces: "
                             f"{', '.join(known)}); write the values, or give them with --set", node.pos)
        self._refuse_replayed(work, node, scope)
        if name in _DIMS:
            if keywords:
                raise self.error(f"{label}() takes the sizes of its axes by position", node.pos)
            dims = [self.known_int(a, f"the size of {label}()", node.pos) for a in args]
            bounded(self, math.prod(dims), label, node)
            return self._placed(self._numpy_call(generator.generator, name, dims, {}, label, node), node, scope, "numpy")
        params = table[name]
        if len(args) > len(params):
            raise self.error(f"{label}() takes at most {len(params)} arguments "
                             f"({', '.join(p for p, _ in params)})", node.pos)
        given = dict(zip((p for p, _ in params), args))
        kinds = dict(params)
        for key, value in keywords.items():
            if key not in kinds or key in given:
                raise self.error(f"{label}() takes {', '.join(kinds)}; got '{key}' (dtype= and out= are not "
                                 "reproduced: gradcli computes in float64)", node.pos)
            given[key] = value
        pool = None
        read = {}
        for key, value in given.items():
            if value is NONE:
                read[key] = None
            elif kinds[key] == "pool" and (self._known(value) is None or self._known(value).ndim > 0):
                pool = self.materialize(value, scope, node.pos)  # an array: the draw picks its rows
                shape = self.shape_of(pool)
                if not shape:
                    raise self.error(f"{label}(): a must be an integer or an array of at least one axis", node.pos)
                read[key] = shape[0]
            else:
                read[key] = self._argument(value, key, kinds[key], label, node)
        for key, value in read.items():
            if kinds[key] == "size" and value is not None or name == "permutation" and isinstance(value, int):
                bounded(self, value if isinstance(value, tuple) else (value,), label, node)
        drawn = self._numpy_call(generator.generator, name, [], read, label, node)
        if pool is None:
            return self._placed(drawn, node, scope, "numpy")
        index = np.asarray(drawn, dtype=np.int64)
        if index.ndim == 0:  # (one pick: the row itself)
            return self.emit(OPS["index"], (pool,), {"index": (int(index),)}, node.pos, node.func, scope)
        return self.emit(OPS["take"], (pool,), {"indices": _nested_tuple(index), "axis": 0, "mode": None},
                         node.pos, node.func, scope)

    def _known(self, value):
        """A value known before evaluation, as an array, else None."""
        if isinstance(value, TupleValue):
            items = [self._known(item) for item in value.items]
            if any(item is None for item in items) or len({item.shape for item in items}) > 1:
                return None
            return np.array(items, dtype=np.float64).reshape((len(items),) + (items[0].shape if items else ()))
        value = self.known_or_given(value) if type(value) is int else value
        value = self.constant_value(value)
        return np.asarray(value.value, dtype=np.float64) if isinstance(value, Literal) else None

    def _argument(self, value, key: str, kind: str, label: str, node):
        """An argument of a sampler as NumPy takes it (ints for sizes and integer bounds)."""
        if isinstance(value, Text):
            raise self.error(f"{label}(): {key} must be a number, not a string", node.pos)
        known = self._known(value)
        if known is None:
            raise self.error(f"{label}(): {key} must be known before evaluation (the draw is made as the program is "
                             "read, as the library makes it): write it in the program", node.pos)
        if kind == "float":
            return known if known.ndim else float(known)
        if kind == "bool":
            return bool(known.all())
        if not np.all(np.isfinite(known)) or np.any(known != np.round(known)):
            raise self.error(f"{label}(): {key} must be an integer, got {known.tolist()}", node.pos)
        ints = known.astype(np.int64)
        return tuple(int(d) for d in ints.reshape(-1)) if kind == "size" and ints.ndim else (
            ints if ints.ndim else int(ints))

    def _numpy_call(self, generator, name: str, args: list, keywords: dict, label: str, node):
        try:
            return getattr(generator, name)(*args, **keywords)
        except (ValueError, TypeError, OverflowError) as exc:
            raise self.error(f"{label}(): NumPy's {type(exc).__name__}: {exc}", node.pos) from None

    def _placed(self, drawn, node, scope, library: str) -> int:
        """The drawn numbers as a constant of the graph (float64, which holds each exactly)."""
        drawn = np.asarray(drawn)
        if drawn.dtype.kind in "iu" and drawn.size and np.abs(drawn).max() > 2 ** 53:
            raise self.error(f"{node.func}(): integers beyond 2**53 are not held exactly in float64", node.pos)
        value = np.asarray(drawn, dtype=np.float64)
        placed = self.graph.add_constant(value if value.ndim else float(value), node.pos, scope.stack)
        self.made_by[placed] = library
        return placed

    # ------------------------------------------------------------------ JAX
    def jax_random(self, name: str, node, values: list, scope):
        """jax.random's keys and samplers: pure functions of the key, reproduced by
        random_streams.py; a key is a value of its own (JaxKey), never an array."""
        label = f"jax.random.{name}"
        params = _JAX_PARAMS.get(name)
        if params is None:
            raise self.error(f"{label}() is not reproduced by gradcli (it reproduces jax.random's "
                             f"{', '.join(sorted(_JAX_PARAMS))}): write the values, or give them with --set", node.pos)
        given = self.arguments_by_name(node, values, params, required=_JAX_REQUIRED.get(name, 1))
        x64 = bool(self.jax_x64)
        for option, allowed in (("impl", ("threefry2x32",)), ("mode", ("low", "high")), ("dtype", ("float32", "float64"))):
            chosen = given.get(option, NONE)
            if chosen is not NONE and not (isinstance(chosen, Text) and chosen.value in allowed and name != "randint"):
                raise self.error(f"{label}({option}=...) is not reproduced by gradcli: leave it out (JAX's default)"
                                 if option != "dtype" else f"{label}(dtype=...): gradcli reproduces float32 draws (and "
                                 "float64 ones after jax.config.update('jax_enable_x64', True)); leave it out", node.pos)
        if name in ("PRNGKey", "key"):
            seed = self.known_int(given["seed"], f"the seed of {label}()", node.pos)
            if not 0 <= seed < (2 ** 63 if x64 else 2 ** 31):
                raise self.error(f"{label}(): gradcli reproduces seeds from 0 to {'2**63' if x64 else '2**31'} - 1, "
                                 f"got {seed}", node.pos)
            return JaxKey(streams.key_from_seed(seed), node.pos)
        key = self._jax_key(given["keys" if name == "key_data" else "key"], label, node)
        if name == "key_data":
            return self._placed(key.data, node, scope, "jax")
        if name == "fold_in":
            data = self.known_int(given["data"], f"the data of {label}()", node.pos)
            return JaxKey(streams.fold_in(key.data, data), node.pos)
        if name == "split":
            num = given.get("num", Literal(np.float64(2), node.pos))
            shape = self._jax_shape(num, label, node, allow_int=True)
            keys = streams.split(key.data, shape)
            return _key_tree(keys, node.pos)
        if name in ("permutation", "choice"):
            return self.jax_pick(name, key, given, node, scope, x64)
        dtype = self._jax_dtype(given.get("dtype"), label, node, x64)
        if name in ("normal", "uniform"):
            shape = self._jax_shape(given.get("shape", TupleValue([], node.pos)), label, node)
            if name == "normal":
                drawn = streams.normal(key.data, shape, dtype)
            else:
                low = self._jax_bound(given.get("minval"), 0.0, "minval", label, node, dtype)
                high = self._jax_bound(given.get("maxval"), 1.0, "maxval", label, node, dtype)
                drawn = streams.uniform(key.data, shape, dtype, low, high)
            return self._placed(drawn, node, scope, "jax")
        if name == "randint":
            shape = self._jax_shape(given["shape"], label, node)
            low, high = (self._argument(given[k], k, "int", label, node) for k in ("minval", "maxval"))
            return self._placed(streams.randint(key.data, shape, low, high, 64 if x64 else 32), node, scope, "jax")
        # bernoulli(key, p=0.5, shape=None): uniform(key, shape, p's type) < p
        p = self._jax_bound(given.get("p"), 0.5, "p", label, node, np.float64 if x64 else np.float32)
        shape = (np.shape(p) if self.is_none(given.get("shape", NONE))
                 else self._jax_shape(given["shape"], label, node))
        if isinstance(given.get("mode"), Text) and given["mode"].value == "high":
            u1, u2 = streams.uniform(key.data, (2, *shape), p.dtype, p.dtype.type(0.0), p.dtype.type(1.0))
            kept = u2 * p.dtype.type(2.0 ** -np.finfo(p.dtype).nmant) < p - u1
        else:
            kept = streams.uniform(key.data, shape, p.dtype, p.dtype.type(0.0), p.dtype.type(1.0)) < p
        return self._placed(kept.astype(np.float64), node, scope, "jax")

    def jax_pick(self, name: str, key: JaxKey, given: dict, node, scope, x64: bool):
        """jax.random.permutation(key, x) and choice(key, a, shape, replace) (without p): indices
        drawn as JAX draws them (a stable sort by random keys; randint), then x's rows at them."""
        label = f"jax.random.{name}"
        for option in ("axis", "independent", "p", "mode"):
            if option in given and not self.is_none(given[option]) and (
                    option in ("p", "mode") or self.constant_truth(given[option])):
                raise self.error(f"{label}({option}=...) is not reproduced by gradcli: leave it out", node.pos)
        pool = given["x" if name == "permutation" else "a"]
        known = self._known(pool)
        n = (self.known_int(pool, f"the size of {label}()", node.pos) if known is not None and known.ndim == 0
             else self.shape_of(pool)[0] if self.shape_of(pool) else None)
        if n is None or n <= 0:
            raise self.error(f"{label}(): give a positive integer or an array of at least one axis", node.pos)
        bounded(self, n, label, node)
        if name == "permutation":
            index = streams.shuffled_indices(key.data, n)
        else:
            shape = self._jax_shape(given.get("shape", TupleValue([], node.pos)), label, node)
            replace = "replace" not in given or bool(self.constant_truth(given["replace"]))
            if not replace and math.prod(shape) > n:
                raise self.error(f"{label}(): cannot take a larger sample (size {math.prod(shape)}) than the "
                                 f"population (size {n}) when replace=False (JAX's ValueError)", node.pos)
            index = (streams.randint(key.data, shape, 0, n, 64 if x64 else 32) if replace else
                     streams.shuffled_indices(key.data, n)[:math.prod(shape)].reshape(shape))
        if known is not None and known.ndim == 0:
            return self._placed(index, node, scope, "jax")
        rows = self.materialize(pool, scope, node.pos)
        if index.ndim == 0:
            return self.emit(OPS["index"], (rows,), {"index": (int(index),)}, node.pos, node.func, scope)
        return self.emit(OPS["take"], (rows,), {"indices": _nested_tuple(np.asarray(index, np.int64)), "axis": 0,
                                                "mode": None}, node.pos, node.func, scope)

    def _jax_key(self, value, label: str, node) -> JaxKey:
        if not isinstance(value, JaxKey):
            raise self.error(f"{label}(): the key must be one made by jax.random.PRNGKey, key, split or fold_in "
                             "(gradcli follows keys from their seed)", node.pos)
        return value

    def _jax_shape(self, value, label: str, node, allow_int: bool = False) -> tuple:
        known = self._known(value) if not isinstance(value, Text) else None
        if known is None or known.ndim > 1 or (known.ndim == 0 and not allow_int):
            raise self.error(f"{label}(): the shape must be a tuple of integers written in the program (JAX: "
                             "shapes are sequences of concrete integers)", node.pos)
        size = self._argument(value, "shape", "size", label, node)
        shape = (size,) if isinstance(size, int) else tuple(size)
        bounded(self, shape, label, node)
        return shape

    def _jax_dtype(self, value, label: str, node, x64: bool):
        if value is None or value is NONE:
            return np.dtype(np.float64 if x64 else np.float32)
        name = value.value if isinstance(value, Text) else None
        if name in ("float32", "float64") and (x64 or name == "float32"):
            return np.dtype(name)
        raise self.error(f"{label}(dtype=...): gradcli reproduces float32 draws (and float64 ones after "
                         "jax.config.update('jax_enable_x64', True)); leave it out", node.pos)

    def _jax_bound(self, value, default: float, key: str, label: str, node, dtype) -> np.ndarray:
        if value is None or value is NONE:
            return np.asarray(default, dtype)
        return np.asarray(self._argument(value, key, "float", label, node), dtype)


def on_cpu(device) -> bool:
    """Whether a `device=` left out or given is the CPU, whose generator gradcli reproduces."""
    return device is NONE or isinstance(device, Text) and device.value.partition(":")[0] == "cpu"


def unseeded(spelled: str, seeding: str) -> str:
    """The refusal of a draw from a generator the program never seeded."""
    return (f"{spelled} draws from a generator the program never seeded, whose numbers gradcli cannot reproduce: "
            f"seed it first ({seeding}; the library then draws the numbers gradcli reproduces), or write the values "
            "in the program, or make the value an input and give it with --set")


def split_keys(value) -> bool:
    """Whether a value is jax.random.split's keys (a tuple of keys), which vmap maps over as rows."""
    return isinstance(value, TupleValue) and bool(value.items) and all(isinstance(v, JaxKey) for v in value.items)


def _key_tree(keys: np.ndarray, pos):
    """split's keys: one JaxKey, or a tuple of them per leading axis (unpacked, indexed, iterated)."""
    if keys.ndim == 1:
        return JaxKey(keys, pos)
    return TupleValue([_key_tree(row, pos) for row in keys], pos)


def _nested_tuple(index: np.ndarray):
    return tuple(_nested_tuple(row) for row in index) if index.ndim > 1 else tuple(int(i) for i in index)
