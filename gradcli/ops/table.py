"""The op record (`Op`) and the tables of every operation, whose families are imported when first
needed (gradcli.ops describes the record)."""
from __future__ import annotations

from collections.abc import Callable


NO_GRADIENT = "no gradient"  # marker: this input receives no gradient from the op
NOT_DIFFERENTIABLE = (NO_GRADIENT,)  # the vjp of an op of one input that passes no gradient


class Op:
    """One operation's record. A plain class written as `dataclass(frozen=True, eq=False)` would
    make it (the same constructor, keywords and repr; equal only to itself), without the dataclass
    machinery at start-up (its generated methods, and `dataclasses` with `inspect`): each field
    below is declared with its default, which the class itself holds for a record not given it."""

    name: str
    forward: Callable
    shape: Callable
    vjp: tuple | None
    args: tuple[str, ...] = ("x",)           # tensor arguments, in call order
    params: dict = None                       # static parameters and defaults (a new {} where not given)
    variadic: bool = False                    # takes any number of tensor arguments
    # `sequence` (of a variadic op): its leading arguments are sequences of arrays, as in
    # `concatenate([a, b], axis=0)`: a list or tuple written there gives its items (of any
    # shapes), an array its rows; the positional arguments after them are its parameters
    sequence: int = 0
    elementwise: bool = False                 # applies to each element, broadcasting its arguments
    public: bool = True                       # callable from programs
    doc: str = ""                             # what it computes (and which arguments have no gradient)
    # Evaluation hints. `ufunc`: the xp ufunc computing it, so the evaluator can write the
    # result into a dead input's buffer, and fuse it with its neighbours (gradcli/engine/fusion.py:
    # an elementwise op with a ufunc is evaluated chunk by chunk inside a chain).
    # `reduce_ufunc`: the ufunc whose reduce over all axes computes it (sum: add), so a fused
    # chain may end in it. `view`: the result may share memory with an input.
    # `finite_closed`: finite inputs always give a finite result (the check can be skipped).
    ufunc: str | None = None
    reduce_ufunc: str | None = None
    view: bool = False
    # What the result costs in memory (the guard's estimate): "new" allocates it; "view" never
    # does (transpose, broadcast_to, a basic index: the result may be strided); "same" returns
    # an input as it is; "reshape" is free only where its input is contiguous (a reshape of a
    # transpose copies). `view` above says whether the result may share an input's memory.
    memory: str = "new"
    finite_closed: bool = False
    # `boolean`: every result is 0 or 1 (comparisons, logical ops), what Python's `and`,
    # `or` and `not` may combine without changing the numbers
    boolean: bool = False
    # How gradient equations simplify as they are built: `identities` = (left, right), the
    # constant that leaves the other operand unchanged on that side (`0 + x`, `x * 1`,
    # `x ** 1`), None where there is none; `involution`: applying it twice is the identity.
    identities: tuple = (None, None)
    involution: bool = False

    # A function that returns a tuple (`sign, logdet = slogdet(a)`, `split(x, 3)`): its items
    # are ops of their own, `parts(*shapes, **params) -> [(op name, params), ...]`, called with
    # the same arguments; the record's own forward and shape rule are then unused.
    parts: Callable | None = None
    # the names of those items as the libraries' named tuples call them (`torch.aminmax(x).max`,
    # `np.linalg.eigh(a).eigenvectors`), in the parts' order; () where the tuple is a plain one
    fields: tuple = ()
    # Why its forward needs more than the array API standard's operations, in words ("NumPy's
    # einsum", "scipy.special's erf"), or `(**params) -> words | None` where that depends on the
    # parameters (an index array); None: standard operations only, which tests/engine/test_backends.py
    # proves by running it on array-api-strict (and a claim of more, by its failing there)
    nonstandard: str | Callable | None = None
    # How `derive` writes an op the language has no name for (a slope used by a gradient):
    # `prints_as(*arguments, **params) -> text` in the language, each argument an atom or
    # parenthesized (an index prints as `x[1:3]`); or (text, precedence) where the text is
    # not an atom (`g / cosh(x) ** 2` binds as a division).
    prints_as: Callable | None = None
    # A composite (a loss of PyTorch's functional API): `expand(E, *args, **params)` builds the
    # call of other ops at the call's place (gradcli.ops.nn describes E), so its gradients and
    # second derivatives are theirs; `forward`, `shape` and `vjp` are then unused. Parameters
    # named in `tensors` take arrays (computed values, or None where left out).
    expand: Callable | None = None
    tensors: tuple[str, ...] = ()

    # ---- printing and lowering (read by gradcli/language/parser.py, gradcli/insight/printer.py, gradcli/language/lower/__init__.py;
    # the operator pairs `a + -b` -> `a - b` are the printer's table OPPOSITES)
    symbol: str | None = None          # the operator that writes it in programs (`+`; `-` for negative; `not`)
    precedence: int | None = None      # how tightly `derive` binds its symbol (1 `<` .. 5 `**`); None: a call
    symbol_reads_truth: bool = False   # its symbol is Python's `and`/`or`/`not`: written so, operands must be 0/1
    literal: Callable | None = None    # `literal(value) -> value` on a literal argument while lowering (`-3`)
    repeats: str | None = None         # its result repeats its input's elements: "broadcast"; "reshape" (if one)
    simpler: Callable | None = None    # `simpler(**params) -> (op, params) | None`: as a gradient emits it (sum_to ())
    stops_gradient: bool = False       # passes its value and, on purpose, no gradient (checks hold it fixed)

    # ---- numbers (read by gradcli/numerics/diagnostics.py, gradcli/numerics/fixes.py): what finite inputs can become
    # `bound`: `rule(input bounds, input shapes, result shape, input arrays or None) -> float | None`,
    # a constant range `(lo, hi)`, or UNBOUNDED; how a bound on |result| follows from the inputs'
    bound: Callable | tuple | str | None = None
    grows: bool = False                # may overflow (exp, multiply, sum): large results are checked for headroom
    underflows: str | None = None      # a 0 result may be a nonzero lost: "rounds" (exp, multiply), "terms" (sum)
    kink: str | None = None            # a derivative by convention: "extremes" (max), "extremes_first", "pair" (maximum), "zero" (abs), "zero_right"
    # (what the few ops with a pole, a domain, an overflow limit or a where trap are known for, and the
    # words and rewrites said of them, is a table keyed by op name: gradcli/numerics/hints.py)

    def __init__(self, name, forward, shape, vjp, args=("x",), params=None, **fields):
        setter = object.__setattr__
        unknown = [key for key in fields if key not in _FIELD_DEFAULTS]
        if unknown:
            raise TypeError(f"Op.__init__() got an unexpected keyword argument '{unknown[0]}'")
        # every field on the record itself, defaults too: a default read from the class would
        # take Python's slow path for attributes, on every equation of every program
        for key, value in {**_FIELD_DEFAULTS, "name": name, "forward": forward, "shape": shape, "vjp": vjp,
                           "args": args, "params": {} if params is None else params, **fields}.items():
            setter(self, key, value)
        # what a call of the op needs, worked out once: argument slots in call order, the
        # parameters that take their default, and whether any parameter must be given
        object.__setattr__(self, "slots", tuple(self.args) + tuple(self.params))
        object.__setattr__(self, "defaults", {k: v for k, v in self.params.items()
                                              if v is not None and v is not REQUIRED})
        object.__setattr__(self, "required", any(v is REQUIRED for v in self.params.values()))

    def __setattr__(self, name, value):  # (frozen: a record is shared by every equation of its op)
        raise AttributeError(f"cannot assign to field '{name}'")

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field '{name}'")

    def __repr__(self):
        return f"Op({', '.join(f'{k}={getattr(self, k)!r}' for k in _FIELD_NAMES)})"

    def replace(self, **changes) -> Op:
        """A new record with these fields changed (as `dataclasses.replace`)."""
        return Op(**{**{k: getattr(self, k) for k in _FIELD_NAMES}, **changes})

    @property
    def arity(self) -> int:
        return len(self.args)

    def rule(self, i: int):
        """The gradient rule for input i: a callable, NO_GRADIENT, or None (no rule).
        A variadic op's single entry is a factory taking i."""
        if self.vjp is None:
            return None
        if self.variadic:
            return self.vjp[0](i)
        return self.vjp[i]


_FIELD_NAMES = tuple(Op.__annotations__)  # the fields in the order declared (the constructor's)
_FIELD_DEFAULTS = {k: getattr(Op, k) for k in _FIELD_NAMES[4:]}


# A record's `bound`, declared: no bound on |result| from the inputs' is claimed (it may exceed
# them, or not be finite), so the diagnostics check the result itself
UNBOUNDED = "unbounded"


class DataError(Exception):
    """An op cannot compute on these values (`solve` of a singular matrix, `cholesky` of one
    that is not positive definite): a user error, reported at the call's place."""


FAMILIES = ("elementwise", "reduce", "norms", "array", "selection", "creation", "linalg", "solves", "index", "nn",
            "convolution", "objectives", "scatter", "factor", "losses", "composed")  # in table order


class _Table(dict):
    """A name -> Op table whose families are imported when first needed: the core's records
    are registered as this module is imported, a family module's the first time one of its
    names is looked up (gradcli/ops/_names.json says which module registers which name; a test
    fails when it is out of date), and every family's by anything that reads the table whole
    (iteration, len, values ...). A family is imported after those before it in FAMILIES
    (register), so the table's order is always the same. A small program imports only the
    families it calls."""

    __slots__ = ()

    def __missing__(self, name):
        if _load_family_of(self, name):
            return dict.__getitem__(self, name)
        raise KeyError(name)

    def get(self, name, default=None):
        if dict.__contains__(self, name) or _load_family_of(self, name):
            return dict.__getitem__(self, name)
        return default

    def __contains__(self, name):
        return dict.__contains__(self, name) or _load_family_of(self, name)

    def _whole(method):  # dict's method, once every family is imported: it reads the table whole
        def whole(self, *args):
            _load_families()
            return method(self, *args)
        return whole

    __iter__, __len__, __reversed__ = _whole(dict.__iter__), _whole(dict.__len__), _whole(dict.__reversed__)
    __eq__, __repr__, __hash__ = _whole(dict.__eq__), _whole(dict.__repr__), None
    keys, values, items = _whole(dict.keys), _whole(dict.values), _whole(dict.items)
    del _whole

    def copy(self):
        _load_families()
        return dict(dict.items(self))


OPS: dict[str, Op] = _Table()      # canonical name -> Op
CALLABLE: dict[str, Op] = _Table()  # a public op's name -> Op (a library's names for it: gradcli/language/dialects)
_core_registered = False  # set once the core's records are in (core_registered)
_families_loaded = False
_index = None  # gradcli/ops/_names.json, read once a name was missing


def _names() -> dict:
    """The index of which module registers each name ({"OPS": {name: module}, "CALLABLE": ...}),
    read on the first name missing from the tables (a small program never reads it)."""
    global _index
    if _index is None:
        import json
        import os
        with open(os.path.join(os.path.dirname(__file__), "_names.json"), encoding="utf-8") as file:
            _index = json.load(file)
    return _index


def _load_family_of(table: _Table, name) -> bool:
    """Import the family module that registers `name` in `table`, if one does and it is not
    imported yet; whether `table` has `name` now."""
    if _families_loaded or not _core_registered:  # (the core registering its own names)
        return False
    family = _names()["OPS" if table is OPS else "CALLABLE"].get(name)
    if family is None or family == "ops":
        return False
    import importlib
    importlib.import_module(f"{__package__}.{family}")
    return dict.__contains__(table, name)


def _load_families() -> None:
    """Every family imported."""
    global _families_loaded
    if not _families_loaded:
        import importlib
        for family in FAMILIES:
            importlib.import_module(f"{__package__}.{family}")
        _families_loaded = True


_families_started: set = set()


def _import_families_before(name: str) -> None:
    """On a family's first record, the families before it in FAMILIES are imported first
    (whichever name or import brought it in), so that the tables keep one order."""
    family = _names()["OPS"].get(name)
    if family is None or family == "ops" or family in _families_started:
        return
    _families_started.add(family)
    import importlib
    for earlier in FAMILIES[:FAMILIES.index(family)]:
        importlib.import_module(f"{__package__}.{earlier}")


REQUIRED = object()  # a static parameter without a default


def register(op: Op, *, replace: bool = False) -> Op:
    """Add `op` to the table (and its names to what programs may call)."""
    if _core_registered and not _families_loaded:
        _import_families_before(op.name)
    if op.name in OPS and not replace:  # (a name of a family not imported yet imports it: refused too)
        raise ValueError(f"operation {op.name!r} is already registered")
    CALLABLE.pop(op.name, None)
    OPS[op.name] = op
    if op.public:
        CALLABLE[op.name] = op
    return op


def core_registered() -> None:
    """The core's records are in: from now on a name missing from the tables imports its family."""
    global _core_registered
    _core_registered = True
