"""optax's gradient transformations beyond the optimizers of optimizers.py: `optax.clip(max_delta)`,
`optax.clip_by_global_norm(max_norm)`, `optax.scale(step_size)`, `optax.add_decayed_weights(weight_decay)`,
`optax.scale_by_trust_ratio()` and `optax.chain(t1, t2, ...)` (each transformation's update applied
to the last one's updates, in order; the state a tuple of theirs), and the schedules of
schedules.py as an optimizer's learning_rate. `optax_call` is where a call spelled `optax.<name>`
of these (and of adagrad, scale_by_adam and lamb, which optimizers.py steps) comes: optax.clip is
not NumPy's clip."""
from __future__ import annotations

from gradcli.language import syntax as ast
from gradcli.language.dialects.spelling import composer
from gradcli.language.lower.clipping import global_norm
from gradcli.language.lower.optimizer_values import OptaxState, OptaxTransform
from gradcli.language.lower.schedules import OPTAX_SCHEDULES, XLA_POWER, OptaxSchedule, fractional_power
from gradcli.language.lower.values import NONE, Scope

# optax's transformations with no state of their own (init gives EmptyState), their arguments and
# optax's defaults (None: required)
_STATELESS = {"clip": {"max_delta": None}, "clip_by_global_norm": {"max_norm": None}, "scale": {"step_size": None},
              "add_decayed_weights": {"weight_decay": 0.0, "mask": None},
              "scale_by_trust_ratio": {"min_norm": 0.0, "trust_coefficient": 1.0, "eps": 0.0}}
# the optimizers' transformations that optimizers.py steps (OPTAX_DEFAULTS)
_STEPPED = ("adagrad", "scale_by_adam", "lamb")
OPTAX_CALLS = frozenset({*_STATELESS, "chain", *OPTAX_SCHEDULES, *_STEPPED})


def trust_ratio_scaled(updates: list, params: list, o: dict, op, number) -> list:
    """optax's scale_by_trust_ratio, leaf by leaf: u * trust_coefficient |p| / (|u| + eps) (each norm
    safe_norm's: min_norm where it is no larger), u itself where either norm is 0."""
    whole = {"axis": None, "keepdims": False}
    zero, bound = number(0.0), number(o["min_norm"])
    scaled = []
    for u, p in zip(updates, params):
        norms = []
        for x in (p, u):
            norm = op("sqrt", op("sum", op("multiply", x, x), **whole))
            norms.append(op("where", op("less_equal", norm, bound), bound, norm))
        ratio = op("divide", op("multiply", number(o["trust_coefficient"]), norms[0]),
                   op("add", norms[1], number(o["eps"])))
        either = op("logical_or", op("equal", norms[0], zero), op("equal", norms[1], zero))
        scaled.append(op("multiply", u, op("where", either, number(1.0), ratio)))
    return scaled


class OptaxChain:
    """Part of the lowering (gradcli.language.lower): optax's stateless transformations and chain."""

    def optax_call(self, bare: str, node: ast.Call, values: list, scope: Scope):
        """`optax.<bare>(...)` for a name of OPTAX_CALLS."""
        if bare in OPTAX_SCHEDULES:
            return self.optax_schedule(bare, node, values)
        if bare in _STEPPED:  # (optimizers.py)
            return self.optax_transform(bare, node, values)
        label = node.func
        if bare == "chain":
            if node.keywords or not values:
                raise self.error(f"{label}(*transforms) takes the transformations by position", node.pos)
            parts, stack = [], list(reversed(values))
            while stack:  # (a chain in a chain is its transformations, in order: no recursion)
                part = stack.pop()
                if not isinstance(part, OptaxTransform):
                    raise self.error(f"{label}(...): each argument must be an optax transformation (optax.adam(1e-3), "
                                     "optax.clip_by_global_norm(1.0))", node.pos)
                if part.kind == "chain":
                    stack.extend(reversed(part.options["parts"]))
                else:
                    parts.append(part)
            return OptaxTransform("chain", {"parts": parts}, node.pos)
        defaults = _STATELESS[bare]
        given = self.arguments_by_name(node, values, tuple(defaults), required=defaults[next(iter(defaults))] is None)
        options = dict(defaults)
        for name, value in given.items():
            if name == "mask":
                if value is not NONE:
                    raise self.error(f"{label}(mask=...) is not supported: leave it out (every leaf is decayed)",
                                     node.pos)
                continue
            options[name] = float(self.schedule_number(label, name, value, node.pos))
        return OptaxTransform(bare, options, node.pos)

    def optax_initial_state(self, transform, params: list, node: ast.Call, scope: Scope):
        """What `transform.init(params)` gives (a chain: the tuple of its parts' states)."""
        if transform.kind != "chain":
            return self._optax_part_state(transform, params, node, scope)
        states = [self._optax_part_state(part, params, node, scope) for part in transform.options["parts"]]
        return OptaxState("chain", 0, {"parts": states}, node.pos)  # (a chain's parts are never chains)

    def _optax_part_state(self, transform, params: list, node: ast.Call, scope: Scope):
        if transform.kind in _STATELESS:
            return OptaxState(transform.kind, 0, {}, node.pos)
        return self.optax_moments(transform, params, node, scope)

    def optax_updated(self, transform, state, grads: list, params, node: ast.Call, scope: Scope):
        """(updates, new state) of `transform.update(grads, state, params)`, leaf by leaf."""
        if transform.kind != "chain":
            return self._optax_part_updated(transform, state, grads, params, node, scope)
        states = []
        for part, part_state in zip(transform.options["parts"], state.moments["parts"]):
            grads, part_state = self._optax_part_updated(part, part_state, grads, params, node, scope)
            states.append(part_state)
        return grads, OptaxState("chain", state.count + 1, {"parts": states}, node.pos)

    def _optax_part_updated(self, transform, state, grads: list, params, node: ast.Call, scope: Scope):
        if transform.kind not in _STATELESS:
            rate = transform.options.get("learning_rate")
            if isinstance(rate, OptaxSchedule):  # (scale_by_schedule: the rate at the count before this update)
                warning = (XLA_POWER, rate.pos, "library_rounding", "optax.exponential_decay")
                if fractional_power(rate, state.count) and warning not in self.graph.warnings:
                    self.graph.warnings.append(warning)
                options = dict(transform.options, learning_rate=rate.value(state.count))
                transform = OptaxTransform(transform.kind, options, transform.pos)
            return self._optax_step(transform, state, grads, params, node, scope)
        op, number = composer(self, node.pos, "update", scope)
        if transform.kind == "clip":  # (jnp.clip: minimum(maximum(x, -d), d))
            delta = transform.options["max_delta"]
            updates = [op("minimum", op("maximum", g, number(-delta)), number(delta)) for g in grads]
        elif transform.kind == "scale":
            updates = [op("multiply", number(transform.options["step_size"]), g) for g in grads]
        elif transform.kind == "add_decayed_weights":  # g + weight_decay p (none at a decay of 0)
            decay = transform.options["weight_decay"]
            if params is None:
                raise self.error("add_decayed_weights.update(grads, state, params): the decayed weights need the "
                                 "params", node.pos)
            updates = grads if decay == 0 else [op("add", g, op("multiply", number(decay), p))
                                                for g, p in zip(grads, params)]
        elif transform.kind == "scale_by_trust_ratio":
            if params is None:
                raise self.error("scale_by_trust_ratio.update(grads, state, params): the trust ratio needs the params",
                                 node.pos)
            updates = trust_ratio_scaled(grads, params, transform.options, op, number)
        else:  # select(norm < max_norm, t, (t / norm) * max_norm)
            bound = transform.options["max_norm"]
            norm = global_norm(op, grads)
            below = op("less", norm, number(bound))
            updates = [op("where", below, g, op("multiply", op("divide", g, norm), number(bound))) for g in grads]
        return updates, state

    def optax_state_matches(self, transform, state) -> bool:
        """Whether `state` is what this transformation's init or update gave (its kind, each part's)."""
        if state.kind != transform.kind:
            return False
        if transform.kind != "chain":
            return True
        parts, states = transform.options["parts"], state.moments["parts"]
        return len(parts) == len(states) and all(s.kind == p.kind for p, s in zip(parts, states))

