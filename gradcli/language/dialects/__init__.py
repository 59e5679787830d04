"""Dialects: how each library's spelling of a call reads as an op of the table.

An op (gradcli.ops) is one meaning; a program spells it the way some library does
(`tf.reduce_max(x, 1)`, `torch.amax(x, 1)`, `np.max(x, 1)`, Python's `max(a, b)`). A spelling's
prefix names the library whose meaning it carries (`PREFIXES`, `split_spelling`). Each library's
module holds what is that library's own:
- `NAMES`: the library's name for an op -> the op's name (`reduce_max` -> `max`). An op's own name
  calls it under any prefix; a name is one meaning whichever prefix it is written with.
- `READINGS`: op name -> `reading(call: Spelling) -> (op name, preset parameters) | None` where
  libraries disagree on what a spelling of that op means (Python's `max(a, b)` compares, NumPy's
  `max(x, 0)` reduces): None keeps the op; it raises ReadingError naming both readings where the
  spelling does not decide. One reading per op, in the module of the library it mostly concerns.
- `ABSENT`: op name -> {array argument: the value that stands for it when left out or None}.
`resolve(spelling)` is the whole answer for one call: (op, preset parameters).

Adding a spelling is one entry in its library's module; adding an op is one record in gradcli.ops
and its test row. A name's entry may map it to a transformation instead of an op's name (what
`tf.gradients`, `jax.grad` or a tape mean): a callable `(lowering, call node, argument values,
scope) -> value` that lowers the call itself, with the lowering's graph, binding and errors at
hand (gradcli.language.lower); `meaning()` gives it back as it gives back an op.

The libraries: numpy.py (and the array API's names), torch.py, tensorflow.py (and Keras),
jax.py (and lax, Optax), scipy.py, python.py (Python's built-ins where they differ from NumPy's
functions of the same names).
"""
from __future__ import annotations

import functools
import math

from gradcli.language.dialects.spelling import ReadingError, Spelling  # noqa: F401 (callers catch ReadingError here)

PREFIXES = {
    "tf.": "tensorflow", "tensorflow.": "tensorflow", "math_ops.": "tensorflow", "nn_ops.": "tensorflow",
    "tf.dtypes.": "tensorflow", "tensorflow.dtypes.": "tensorflow",  # tf.dtypes.float32
    "np.": "numpy", "numpy.": "numpy", "jnp.": "numpy", "jax.numpy.": "numpy", "anp.": "numpy",
    "autograd.numpy.": "numpy", "linalg.": "numpy",
    "jax.nn.": "jax", "jax.lax.": "jax", "lax.": "jax", "jax.": "jax",
    "jax.scipy.special.": "scipy", "jax.scipy.": "scipy", "scipy.special.": "scipy", "scipy.": "scipy", "integrate.": "scipy",
    "jax.scipy.stats.": "scipy", "scipy.stats.": "scipy", "stats.": "scipy",
    "special.": "scipy",
    "torch.func.": "torch",  # torch.func.grad, jacrev, hessian, vjp, vmap: JAX's transforms, as JAX spells them
    "torch.nn.functional.": "torch", "nn.functional.": "torch", "torch.special.": "torch", "torch.linalg.": "torch", "torch.": "torch",
    "F.": "torch", "optax.": "optax", "optax.losses.": "optax",
    "keras.ops.": "keras", "keras.backend.": "keras", "keras.activations.": "keras", "keras.": "keras",
    "keras.losses.": "keras", "K.": "keras", "ops.": "keras", "activations.": "keras", "losses.": "keras",
    "math.": "python", "functools.": "python",
    "autograd.": "autograd",  # HIPS autograd's grad, elementwise_grad, ... (its numpy is NumPy's, above)
    # `nn.` is TensorFlow's tf.nn, JAX's (and Flax's) nn or PyTorch's torch.nn: where
    # their meanings differ (gelu, leaky_relu) the op's reading refuses to choose
    "nn.": "nn",
}
# longest first, so that `jax.numpy.` is read before `jax.`
_PREFIX_ORDER = tuple(sorted(PREFIXES.items(), key=lambda item: -len(item[0])))
CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}

# Keyword spellings of TensorFlow and NumPy, mapped to the table's parameter names.
KEYWORD_ALIASES = {
    "keep_dims": "keepdims", "keepdim": "keepdims", "dim": "axis", "perm": "axes", "newshape": "shape",
    "clip_value_min": "lo", "clip_value_max": "hi", "a_min": "lo", "a_max": "hi", "min": "lo", "max": "hi",
    "negative_slope": "alpha", "correction": "ddof", "interpolation": "method",
    "shifts": "shift", "paddings": "pad_width", "multiples": "reps", "dim1": "axis1", "dim2": "axis2",
    "reduction_indices": "axis", "dims": "axis", "depth": "num_classes", "diagonal": "k",
    "steps": "num",  # torch.linspace(start, end, steps)
}
FIRST_ARGUMENT_KEYWORDS = ("input_tensor", "input", "a", "x", "t", "tensor", "logits", "features")
# The keywords by which libraries name a sequence of arrays (`tf.concat(values=...)`, `torch.cat(tensors=...)`)
SEQUENCE_KEYWORDS = ("values", "tensors", "arrays", "tup", "seq", "condlist", "choicelist")

# dtype names in pasted code (`tf.float32`, `np.float64`, 'float32'): a cast to a floating type
# rounds to it as its library does (gradcli/ops/casts.py); the others would change the numbers
FLOAT_DTYPES = {"float16", "float32", "float64", "double", "single", "half", "float", "bfloat16", "float_",
                "float8_e4m3fn", "float8_e5m2"}
OTHER_DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool", "bool_",
                "int", "complex64", "complex128", "complex", "long"}
# Constructors whose second positional argument is the dtype (`tf.constant([1, 2], tf.float32)`,
# `np.array(x, float)`, `torch.as_tensor(x, torch.float64)`)
DTYPE_SECOND_ARGUMENT = frozenset({"constant", "convert_to_tensor", "array", "asarray", "as_tensor"})
# Functions of pasted code that are numbers: Keras' fuzz factor, torch.cuda.is_available()
CONSTANT_FUNCTIONS = {"epsilon": 1e-7, "cuda.is_available": 0.0}  # (gradcli's PyTorch has no CUDA of its own)
# the names the lowering may read as something other than their op (numbers, shapes, casts)
SPECIAL_CALLS = frozenset(CONSTANT_FUNCTIONS) | {"len", "cast", "astype"} | FLOAT_DTYPES | OTHER_DTYPES
# NumPy array attributes read as the functions they are
ATTRIBUTES = {"T": "transpose", "mT": "matrix_transpose", "mH": "matrix_transpose"}  # (values are real)


@functools.lru_cache(maxsize=4096)  # a program calls the same few names over and over
def split_spelling(name: str) -> tuple[str, str]:
    """(library, bare name): `np.max` -> ("numpy", "max"); a bare `max` is Python's."""
    library = None
    changed = True
    while changed:
        changed = False
        for prefix, owner in _PREFIX_ORDER:
            if name.startswith(prefix):
                name = name[len(prefix):]
                library = library or owner
                changed = True
                break  # longest first again: `tensorflow.keras.backend.` is one prefix after another
    return library or "python", name


def strip_prefixes(name: str) -> str:
    return split_spelling(name)[1]


# (imported here, after what they import from this module)
from gradcli.language.dialects import jax, numpy, python, scipy, tensorflow, torch  # noqa: E402
from gradcli.ops import CALLABLE, OPS, Op  # noqa: E402

_LIBRARIES = (python, numpy, scipy, jax, tensorflow, torch)


def _merged(table: str) -> dict:
    """One library table of every module, each key held by one library."""
    merged: dict = {}
    for library in _LIBRARIES:
        for key, value in getattr(library, table).items():
            if key in merged:
                raise AssertionError(f"{library.__name__}.{table}[{key!r}] is held by another library too")
            merged[key] = value
    return merged


NAMES: dict = _merged("NAMES")
READINGS: dict = _merged("READINGS")
ABSENT: dict = _merged("ABSENT")


def meaning(name: str):
    """What a bare name calls: the op named so by a library (`reduce_max`) or by itself (`max`),
    a library's transformation, or None (it names nothing callable)."""
    target = NAMES.get(name)
    if target is None:
        return CALLABLE.get(name)
    return OPS.get(target) if type(target) is str else target


def reads(op) -> bool:
    """Whether a call of `op` is read from its spelling (resolve), not taken as written."""
    return op.name in READINGS or "reduction" in op.params


def resolve(spelling: Spelling):
    """The op a call means and the parameters its spelling presets: (op, preset). Raises
    ReadingError where the spelling reads two ways (the message names both)."""
    op = meaning(spelling.name)
    if "reduction" in op.params:  # a loss of PyTorch's functional API
        torch.options_by_keyword(op, spelling)
    reading = READINGS.get(op.name)
    chosen = reading(spelling) if reading is not None else None
    if chosen is None:
        return op, {}
    return OPS[chosen[0]], chosen[1]


def names_of(op_name: str) -> list[str]:
    """The libraries' names for an op (its own name aside), in the libraries' order."""
    return [name for name, target in NAMES.items() if target == op_name]


def callable_names() -> list[str]:
    """Every name a program may call: the public ops' and the libraries' names for them."""
    return list(CALLABLE) + [name for name in NAMES if name not in CALLABLE]


def callable_ops() -> dict:
    """Every name a program may call -> the op it calls (as written without a reading); a name
    whose entry is a transformation (`x.to`, `F.dropout`) calls no op and is left out, unless
    another library's spelling of it is an op."""
    found = ((name, meaning(name)) for name in callable_names())
    # (a transformation that another library's spelling reads as an op, lax.cond's np.linalg.cond, is that op)
    return {name: entry if isinstance(entry, Op) else OPS[entry.op_name] for name, entry in found
            if isinstance(entry, Op) or getattr(entry, "op_name", None) is not None}


def spelled_libraries(module, text: str) -> tuple[str, bool]:
    """(whose methods and subscripts the program's are: "torch" or "numpy"; whether it spells
    PyTorch beside another array library), from its imports and prefixes (gradcli's torch.py)."""
    spells_torch, spells_other = torch.spelled(module, text)
    return ("torch" if spells_torch and not spells_other else "numpy"), spells_torch and spells_other


# the libraries whose functions make arrays: a value made by one has that library's methods
ARRAY_LIBRARIES = frozenset({"numpy", "torch", "jax", "tensorflow", "keras", "scipy", "optax"})


def methods_of(made_by: str | None, method: str) -> str | None:
    """Whose methods a value's are ("torch" or "numpy"), from the library whose function made it:
    PyTorch's for a tensor, NumPy's for the other libraries' arrays (JAX's and TensorFlow's
    methods read as NumPy's); for a value of unknown origin, PyTorch's where only a tensor has
    the method (`x.where(c, y)`), else None."""
    if made_by == "torch":
        return "torch"
    if made_by is not None:
        return "numpy"
    return "torch" if method in torch.RECEIVER_PLACES else None


def receiver_place(library: str, method: str) -> int:
    """Where a method's receiver stands among the arguments of the function of its name: first,
    but second for PyTorch's x.where(condition, y), torch.where(condition, x, y). Raises
    ReadingError where the library's arrays have no such method."""
    if library == "torch":
        return torch.RECEIVER_PLACES.get(method, 0)
    if method in numpy.MISSING_METHODS:
        raise ReadingError(numpy.MISSING_METHODS[method])
    return 0


def sizes_written_apart(library: str, op, count: int) -> bool:
    """Whether a constructor's shape is written as separate numbers (`torch.ones(3, 4)`)."""
    return library == "torch" and torch.sizes_written_apart(op, count)


def empty_axes_refusal(library: str, label: str) -> str | None:
    """Why a reduction over an empty list of axes is refused in this library, or None."""
    return torch.empty_dims_refusal(label) if library == "torch" else None


def integer_refusal(library: str | None, name: str) -> str | None:
    """What a library does instead of gradcli's floating-point answer when `name` (as written,
    prefix stripped) reduces an integer tensor (`tf.reduce_mean([1, 2])` is 1), or None."""
    table = tensorflow.ON_INTEGERS if library == "tensorflow" else torch.ON_INTEGERS if library == "torch" else None
    return None if table is None else table.get(name)
