"""The shape and array family: each op's forward against NumPy (or the library it is spelled
after), its gradient and second derivative against float64 finite differences, a float32 run;
then the refusals (positioned user errors) and how each library's own spelling is read
(np.split counts parts, torch.split sizes them, tf.split lists sizes)."""
import numpy as np
import pytest
import scipy.linalg

from gradcli import api
from gradcli.errors import GradcliError

from gradcheck import check_op_case


def normal(shape=(2, 3)):
    return lambda rng: rng.standard_normal(shape)


def const(value):
    return lambda rng: np.asarray(value, dtype=np.float64)


def away(shape=(2, 3)):  # |x| in [0.3, 2], either sign, away from 0 and the integers' kinks
    return lambda rng: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 0.45, shape) + rng.integers(-2, 3, shape)


def torch_gather(x, dim, index):
    index = np.asarray(index)
    sliced = x[tuple(slice(0, n) if k != dim else slice(None) for k, n in enumerate(index.shape))]
    return np.take_along_axis(sliced, index, dim)


def dynamic_update_slice(x, u, start):
    out = x.copy()
    start = [min(max(s, 0), n - m) for s, n, m in zip(start, x.shape, u.shape)]
    out[tuple(slice(s, s + m) for s, m in zip(start, u.shape))] = u
    return out


def torch_split(x, size, axis=0):
    return np.split(x, list(range(size, x.shape[axis], size)), axis=axis)


# (program, differentiated inputs, reference, options)
CASES = [
    # joining: a list literal of arrays of different shapes is the sequence of arrays
    ("y = np.concatenate([a, b])", {"a": normal((2, 3)), "b": normal((1, 3))}, lambda a, b: np.concatenate([a, b]), {}),
    ("y = np.concatenate((a, b), axis=1)", {"a": normal((2, 1)), "b": normal((2, 3))},
     lambda a, b: np.concatenate((a, b), axis=1), {}),
    ("y = np.concatenate([a, b, a], axis=None)", {"a": normal((2, 2)), "b": normal((3,))},
     lambda a, b: np.concatenate([a, b, a], axis=None), {}),
    ("y = np.concatenate(a)", {"a": normal((3, 2))}, lambda a: np.concatenate(a), {}),
    ("y = tf.concat([a, b], -1)", {"a": normal((2, 2)), "b": normal((2, 1))}, lambda a, b: np.concatenate([a, b], -1), {}),
    ("y = torch.cat([a, b])", {"a": normal((1, 2)), "b": normal((2, 2))}, lambda a, b: np.concatenate([a, b]), {}),
    ("y = np.stack([a, b], axis=1)", {"a": normal((2, 3)), "b": normal((2, 3))},
     lambda a, b: np.stack([a, b], axis=1), {}),
    ("y = torch.stack((a, b), -1)", {"a": normal((3,)), "b": normal((3,))}, lambda a, b: np.stack((a, b), -1), {}),
    ("y = np.vstack([a, b])", {"a": normal((2, 3)), "b": normal((3,))}, lambda a, b: np.vstack([a, b]), {}),
    ("y = np.row_stack([a, b])", {"a": normal((2, 3)), "b": normal((1, 3))}, lambda a, b: np.vstack([a, b]), {}),
    ("y = np.hstack([a, b])", {"a": normal((2, 1)), "b": normal((2, 3))}, lambda a, b: np.hstack([a, b]), {}),
    ("y = np.hstack((a, b))", {"a": normal((2,)), "b": normal((3,))}, lambda a, b: np.hstack((a, b)), {}),
    ("y = np.dstack([a, b])", {"a": normal((2, 3)), "b": normal((2, 3, 2))}, lambda a, b: np.dstack([a, b]), {}),
    ("y = np.column_stack([a, b])", {"a": normal((3,)), "b": normal((3, 2))}, lambda a, b: np.column_stack([a, b]), {}),
    # NumPy's index tricks: a subscript that joins (vectors as columns in np.c_, numbers as 1x1)
    ("y = np.c_[a, b, a]", {"a": normal((3, 2)), "b": normal((3, 2))}, lambda a, b: np.c_[a, b, a], {}),
    ("y = np.c_[a, b]", {"a": normal((3,)), "b": normal((3, 2))}, lambda a, b: np.c_[a, b], {}),
    ("y = jnp.c_[a, a * b]", {"a": normal((4,)), "b": normal((4,))}, lambda a, b: np.c_[a, a * b], {}),
    ("y = np.r_[a, 2.5, b]", {"a": normal((3,)), "b": normal((2,))}, lambda a, b: np.r_[a, 2.5, b], {}),
    ("y = jnp.r_[a, b]", {"a": normal((2, 3)), "b": normal((1, 3))}, lambda a, b: np.r_[a, b], {}),
    ("y = np.append(a, b)", {"a": normal((2, 2)), "b": normal((3,))}, lambda a, b: np.append(a, b), {}),
    ("y = np.append(a, b, axis=0)", {"a": normal((2, 3)), "b": normal((1, 3))}, lambda a, b: np.append(a, b, axis=0), {}),
    # splitting: tuple results
    ("p, q = np.split(x, 2, axis=1)\ny = p * q", {"x": normal((2, 4))},
     lambda x: np.split(x, 2, axis=1)[0] * np.split(x, 2, axis=1)[1], {}),
    ("y = np.split(x, [1, 3])[2]", {"x": normal((5, 2))}, lambda x: np.split(x, [1, 3])[2], {}),
    ("y = np.array_split(x, 3)[0]", {"x": normal((5,))}, lambda x: np.array_split(x, 3)[0], {}),
    ("y = np.hsplit(x, 2)[1]", {"x": normal((2, 4))}, lambda x: np.hsplit(x, 2)[1], {}),
    ("y = np.vsplit(x, [1])[1]", {"x": normal((3, 2))}, lambda x: np.vsplit(x, [1])[1], {}),
    ("y = np.dsplit(x, 2)[0]", {"x": normal((1, 2, 4))}, lambda x: np.dsplit(x, 2)[0], {}),
    ("y = tf.split(x, [1, -1], axis=1)[1]", {"x": normal((2, 4))}, lambda x: x[:, 1:], {}),
    ("y = tf.split(x, 2)[1]", {"x": normal((4, 2))}, lambda x: x[2:], {}),
    ("y = torch.split(x, 2, dim=1)[1]", {"x": normal((2, 5))}, lambda x: torch_split(x, 2, 1)[1], {}),
    ("y = torch.split(x, [1, 3])[1]", {"x": normal((4,))}, lambda x: x[1:], {}),
    ("y = torch.chunk(x, 3)[2]", {"x": normal((5, 2))}, lambda x: x[4:], {}),
    ("y = torch.unbind(x, 1)[2]", {"x": normal((2, 3))}, lambda x: x[:, 2], {}),
    ("y = tf.unstack(x, 3, axis=1)[0]", {"x": normal((2, 3))}, lambda x: x[:, 0], {}),
    ("y = torch.tensor_split(x, 3)[1]", {"x": normal((4,))}, lambda x: np.array_split(x, 3)[1], {}),
    # reshaping and reordering
    ("y = np.squeeze(x)", {"x": normal((1, 3, 1))}, lambda x: np.squeeze(x), {}),
    ("y = np.squeeze(x, axis=2)", {"x": normal((1, 3, 1))}, lambda x: np.squeeze(x, axis=2), {}),
    ("y = torch.squeeze(x, 1)", {"x": normal((1, 3, 1))}, lambda x: x, {}),
    ("y = np.expand_dims(x, (0, 3))", {"x": normal((2, 3))}, lambda x: np.expand_dims(x, (0, 3)), {}),
    ("y = torch.unsqueeze(x, -1)", {"x": normal((2, 3))}, lambda x: x[..., None], {}),
    ("y = np.ravel(x)", {"x": normal((2, 3))}, lambda x: np.ravel(x), {}),
    ("y = x.flatten()", {"x": normal((2, 3))}, lambda x: x.flatten(), {}),
    ("y = torch.flatten(x, 1)", {"x": normal((2, 3, 2))}, lambda x: x.reshape(2, 6), {}),
    ("y = np.swapaxes(x, 0, 2)", {"x": normal((2, 3, 4))}, lambda x: np.swapaxes(x, 0, 2), {}),
    ("y = np.moveaxis(x, [0, 1], [-1, 0])", {"x": normal((2, 3, 4))}, lambda x: np.moveaxis(x, [0, 1], [-1, 0]), {}),
    ("y = np.rollaxis(x, 2, 1)", {"x": normal((2, 3, 4))}, lambda x: np.rollaxis(x, 2, 1), {}),
    ("y = np.rollaxis(x, 0, 3)", {"x": normal((2, 3, 4))}, lambda x: np.rollaxis(x, 0, 3), {}),
    ("y = np.flip(x)", {"x": normal((2, 3))}, lambda x: np.flip(x), {}),
    ("y = np.flip(x, (0, 2))", {"x": normal((2, 3, 2))}, lambda x: np.flip(x, (0, 2)), {}),
    ("y = np.fliplr(x)", {"x": normal((2, 3))}, lambda x: np.fliplr(x), {}),
    ("y = np.flipud(x)", {"x": normal((2, 3))}, lambda x: np.flipud(x), {}),
    ("y = np.roll(x, 2)", {"x": normal((2, 3))}, lambda x: np.roll(x, 2), {}),
    ("y = np.roll(x, (1, -1), axis=(0, 1))", {"x": normal((3, 4))}, lambda x: np.roll(x, (1, -1), axis=(0, 1)), {}),
    ("y = np.rot90(x)", {"x": normal((2, 3))}, lambda x: np.rot90(x), {}),
    ("y = np.rot90(x, 3, axes=(1, 2))", {"x": normal((2, 3, 4))}, lambda x: np.rot90(x, 3, axes=(1, 2)), {}),
    ("y = np.tile(x, 2)", {"x": normal((2, 3))}, lambda x: np.tile(x, 2), {}),
    ("y = np.tile(x, (2, 1, 3))", {"x": normal((2, 2))}, lambda x: np.tile(x, (2, 1, 3)), {}),
    ("y = matrix_transpose(x)", {"x": normal((2, 3, 4))}, lambda x: np.swapaxes(x, -1, -2), {}),
    ("y = reshape_order(x, (3, 2), order='F')", {"x": normal((2, 3))}, lambda x: x.reshape((3, 2), order="F"), {}),
    ("y = np.reshape(x, (4, 3, 2), order='F')", {"x": normal((2, 3, 4))}, lambda x: x.reshape((4, 3, 2), order="F"),
     {}),
    ("y = expand_sizes(x, (2, -1, 3))", {"x": normal((4, 1))}, lambda x: np.broadcast_to(x, (2, 4, 3)), {}),
    ("y = np.repeat(x, 2)", {"x": normal((2, 2))}, lambda x: np.repeat(x, 2), {}),
    ("y = np.repeat(x, [2, 0, 1], axis=1)", {"x": normal((2, 3))}, lambda x: np.repeat(x, [2, 0, 1], axis=1), {}),
    ("y = torch.repeat_interleave(x, 3, dim=0)", {"x": normal((2, 2))}, lambda x: np.repeat(x, 3, axis=0), {}),
    ("y = np.pad(x, 1)", {"x": normal((2, 3))}, lambda x: np.pad(x, 1), {}),
    ("y = np.pad(x, ((1, 0), (2, 1)), constant_values=2.5)", {"x": normal((2, 3))},
     lambda x: np.pad(x, ((1, 0), (2, 1)), constant_values=2.5), {}),
    ("y = np.pad(x, ((2, 1), (3, 2)), mode='reflect')", {"x": normal((3, 3))},
     lambda x: np.pad(x, ((2, 1), (3, 2)), mode="reflect"), {}),
    ("y = np.pad(x, 2, mode='symmetric')", {"x": normal((2, 3))}, lambda x: np.pad(x, 2, mode="symmetric"), {}),
    ("y = np.pad(x, (1, 3), mode='edge')", {"x": normal((2, 3))}, lambda x: np.pad(x, (1, 3), mode="edge"), {}),
    ("y = np.pad(x, 4, mode='wrap')", {"x": normal((2, 3))}, lambda x: np.pad(x, 4, mode="wrap"), {}),
    ("y = tf.pad(x, [[1, 1], [0, 2]], 'REFLECT')", {"x": normal((3, 3))},
     lambda x: np.pad(x, [[1, 1], [0, 2]], mode="reflect"), {}),
    ("y = F.pad(x, (1, 2), mode='replicate')", {"x": normal((2, 3))}, lambda x: np.pad(x, ((0, 0), (1, 2)), mode="edge"), {}),
    ("y = F.pad(x, (1, 0, 0, 2), value=1.5)", {"x": normal((2, 3))},
     lambda x: np.pad(x, ((0, 2), (1, 0)), constant_values=1.5), {}),
    ("y = np.atleast_1d(x)", {"x": normal(())}, lambda x: np.atleast_1d(x), {}),
    ("y = np.atleast_2d(x)", {"x": normal((3,))}, lambda x: np.atleast_2d(x), {}),
    ("y = np.atleast_3d(x)", {"x": normal((2, 3))}, lambda x: np.atleast_3d(x), {}),
    ("p, q = np.broadcast_arrays(a, b)\ny = p * q + p", {"a": normal((2, 1)), "b": normal((3,))},
     lambda a, b: a * b + np.broadcast_to(a, (2, 3)), {}),
    ("y = torch.broadcast_tensors(a, b)[1]", {"a": normal((2, 1)), "b": normal((3,))},
     lambda a, b: np.broadcast_to(b, (2, 3)), {}),
    # PyTorch's own
    ("y = torch.split_with_sizes(x, [1, 2], 1)[1]", {"x": normal((2, 3))}, lambda x: x[:, 1:], {}),
    ("y = torch.unflatten(x, 1, (2, -1))", {"x": normal((2, 4))}, lambda x: x.reshape(2, 2, 2), {}),
    ("y = torch.constant_pad_nd(x, [0, 1, 2, 0], 1.5)", {"x": normal((2, 3))},
     lambda x: np.pad(x, ((2, 0), (0, 1)), constant_values=1.5), {}),
    ("y = torch.select_scatter(x, s, 1, -1)", {"x": normal((2, 3)), "s": normal((2,))},
     lambda x, s: np.concatenate([x[:, :2], s[:, None]], 1), {}),
    ("y = torch.slice_scatter(x, s, 0, 1, None, 2)", {"x": normal((4, 2)), "s": normal((2, 2))},
     lambda x, s: np.stack([x[0], s[0], x[2], s[1]]), {}),
    ("y = torch.diagonal_scatter(x, s, 1)", {"x": normal((3, 3)), "s": normal((2,))},
     lambda x, s: x - np.diag(np.diag(x, 1), 1) + np.diag(s, 1), {}),
    ("y = torch.combinations(x, 2)", {"x": normal((4,))},
     lambda x: np.array([[x[i], x[j]] for i in range(4) for j in range(i + 1, 4)]), {}),
    ("y = torch.combinations(x, 2, with_replacement=True)", {"x": normal((2,))},
     lambda x: np.array([[x[0], x[0]], [x[0], x[1]], [x[1], x[1]]]), {}),
    ("y = torch.cartesian_prod(a, b)", {"a": normal((2,)), "b": normal((3,))},
     lambda a, b: np.array([[p, q] for p in a for q in b]), {}),
    ("y = x.unfold(1, 3, 2)", {"x": normal((2, 6))},
     lambda x: np.stack([x[:, 0:3], x[:, 2:5]], axis=1), {}),
    # the ops gradients and library readings emit, by the names `derive` prints them with
    ("y = squeeze_loose(x, axis=1)", {"x": normal((1, 3))}, lambda x: x, {}),
    ("y = flatten_dims(x, start_dim=1)", {"x": normal((2, 2, 2))}, lambda x: x.reshape(2, 4), {}),
    ("y = gather_axis(x, indices=[[1, 1]], axis=1)", {"x": normal((2, 3))}, lambda x: x[:, [[1, 1]]], {}),
    ("y = gather_axis_add(x, indices=[2, 0, 2], axis=1, size=4)", {"x": normal((2, 3))},
     lambda x: np.stack([x[:, 1], 0 * x[:, 0], x[:, 0] + x[:, 2], 0 * x[:, 0]], axis=1), {}),
    ("y = gather_flat(x, flat=[5, 0, 5], shape=[2, 3])", {"x": normal((2, 3))}, lambda x: x.reshape(-1)[[5, 0, 5]], {}),
    ("y = gather_flat_add(x, flat=[3, 0, 3], shape=[2, 2])", {"x": normal((3,))},
     lambda x: np.array([[x[1], 0], [0, x[0] + x[2]]]), {}),
    ("y = embed_diagonal(x, shape=[3, 2], offset=-1)", {"x": normal((2,))}, lambda x: np.diag(x, -1)[:, :2], {}),
    ("y = broadcast_part(a, b, k=1)", {"a": normal((2, 1)), "b": normal((3,))}, lambda a, b: np.broadcast_to(b, (2, 3)),
     {}),
    ("y = meshgrid_part(a, b, k=0, indexing='ij')", {"a": normal((2,)), "b": normal((3,))},
     lambda a, b: np.meshgrid(a, b, indexing="ij")[0], {}),
    ("y = torch_gather(x, axis=0, index=[[1, 0]])", {"x": normal((2, 2))}, lambda x: np.array([[x[1, 0], x[0, 1]]]), {}),
    ("y = torch_pad(x, pad=[1, 1], mode='circular')", {"x": normal((2, 3))},
     lambda x: np.pad(x, ((0, 0), (1, 1)), mode="wrap"), {}),
    ("y = torch_select(x, axis=0, index=1)", {"x": normal((2, 3))}, lambda x: x[1], {}),
    ("y = tf_slice(x, begin=[0, 1], size=[2, -1])", {"x": normal((2, 3))}, lambda x: x[:, 1:], {}),
    # diagonals and triangles
    ("y = np.diag(x)", {"x": normal((3,))}, lambda x: np.diag(x), {}),
    ("y = np.diag(x, k=-1)", {"x": normal((3,))}, lambda x: np.diag(x, k=-1), {}),
    ("y = np.diag(x, 1)", {"x": normal((3, 4))}, lambda x: np.diag(x, 1), {}),
    ("y = np.diagflat(x, 1)", {"x": normal((2, 2))}, lambda x: np.diagflat(x, 1), {}),
    ("y = np.diagonal(x)", {"x": normal((3, 4))}, lambda x: np.diagonal(x), {}),
    ("y = np.diagonal(x, -1, axis1=2, axis2=0)", {"x": normal((3, 2, 4))},
     lambda x: np.diagonal(x, -1, axis1=2, axis2=0), {}),
    ("y = np.linalg.diagonal(x)", {"x": normal((2, 3, 3))}, lambda x: np.diagonal(x, axis1=-2, axis2=-1), {}),
    ("y = tf.linalg.diag_part(x)", {"x": normal((2, 3, 3))}, lambda x: np.diagonal(x, axis1=-2, axis2=-1), {}),
    ("y = tf.linalg.diag(x)", {"x": normal((2, 3))}, lambda x: np.stack([np.diag(r) for r in x]), {}),
    ("y = torch.diag_embed(x, 1)", {"x": normal((2, 2))}, lambda x: np.stack([np.diag(r, 1) for r in x]), {}),
    ("y = np.tril(x)", {"x": normal((3, 3))}, lambda x: np.tril(x), {}),
    ("y = np.tril(x, -1)", {"x": normal((2, 3, 4))}, lambda x: np.tril(x, -1), {}),
    ("y = np.triu(x, k=1)", {"x": normal((3, 4))}, lambda x: np.triu(x, k=1), {}),
    ("y = scipy.linalg.block_diag(a, b, c)", {"a": normal((2, 2)), "b": normal((3,)), "c": normal(())},
     lambda a, b, c: scipy.linalg.block_diag(a, b, c), {}),
    # selection by constant indices: gathers whose gradient adds up at repeated indices
    ("y = np.take(x, [3, 0, 3])", {"x": normal((2, 3))}, lambda x: np.take(x, [3, 0, 3]), {}),
    ("y = np.take(x, [[1, 1], [0, 2]], axis=1)", {"x": normal((2, 3))}, lambda x: np.take(x, [[1, 1], [0, 2]], axis=1), {}),
    ("y = np.take(x, -1, axis=0)", {"x": normal((2, 3))}, lambda x: np.take(x, -1, axis=0), {}),
    ("y = np.take_along_axis(x, i, axis=1)", {"x": normal((2, 3))},
     lambda x, i: np.take_along_axis(x, i.astype(int), axis=1), {"fixed": {"i": const([[0, 2, 2, 0], [1, 1, -1, 0]])}}),
    ("y = np.take_along_axis(x, i, 0)", {"x": normal((3, 2))},
     lambda x, i: np.take_along_axis(x, i.astype(int), 0), {"fixed": {"i": const([[2], [0], [2]])}}),
    ("y = tf.gather(x, [2, 0, 2])", {"x": normal((3, 2))}, lambda x: x[[2, 0, 2]], {}),
    ("y = tf.gather(x, [[1], [0]], axis=1)", {"x": normal((3, 2))}, lambda x: np.take(x, [[1], [0]], axis=1), {}),
    ("y = torch.index_select(x, 1, [2, 2, 0])", {"x": normal((2, 3))}, lambda x: x[:, [2, 2, 0]], {}),
    ("y = torch.gather(x, 1, [[0, 0], [2, 1]])", {"x": normal((3, 3))},
     lambda x: torch_gather(x, 1, [[0, 0], [2, 1]]), {}),
    ("y = x.gather(0, [[2, 1, 2]])", {"x": normal((3, 3))}, lambda x: torch_gather(x, 0, [[2, 1, 2]]), {}),
    ("y = np.select([x > 0.5, x < -0.5], [x * x, 2 * x + w], 0.25)",
     {"x": const([[1.0, -1.0, 0.1], [0.7, -0.2, -2.0]]), "w": normal((3,))},
     lambda x, w: np.select([x > 0.5, x < -0.5], [x * x, 2 * x + w], 0.25), {}),
    ("y = torch.select(x, 1, -1)", {"x": normal((2, 3))}, lambda x: x[:, -1], {}),
    ("y = lax.select(x > 0, x * x, w)", {"x": normal((2, 3)), "w": normal((2, 3))},
     lambda x, w: np.where(x > 0, x * x, w), {}),
    ("y = torch.take_along_dim(x, i)", {"x": normal((2, 3))}, lambda x, i: x.reshape(-1)[i.astype(int)],
     {"fixed": {"i": const([5, 0, 5])}}),
    ("y = lax.slice(x, [1, 0], [3, 2])", {"x": normal((3, 3))}, lambda x: x[1:3, 0:2], {}),
    ("y = lax.slice(x, [0, 1], [3, 3], [2, 1])", {"x": normal((3, 3))}, lambda x: x[0:3:2, 1:3], {}),
    ("y = tf.slice(x, [1, 0], [-1, 2])", {"x": normal((3, 3))}, lambda x: x[1:, :2], {}),
    # JAX counts a negative start from the end, then clamps (-1 of 3 is 2, clamped to 1)
    ("y = lax.dynamic_slice(x, [2, -1], [2, 2])", {"x": normal((3, 3))}, lambda x: x[1:3, 1:3], {}),
    ("y = lax.dynamic_slice(x, (-1, 0), (2, 2))", {"x": normal((3, 4))}, lambda x: x[1:3, 0:2], {}),
    ("y = lax.dynamic_update_slice(x, u, [1, 2])", {"x": normal((3, 4)), "u": normal((2, 3))},
     lambda x, u: dynamic_update_slice(x, u, [1, 2]), {}),
    ("y = lax.dynamic_update_slice(x, u, (-1, 0))", {"x": normal((3, 4)), "u": normal((2, 2))},
     lambda x, u: dynamic_update_slice(x, u, [1, 0]), {}),
    ("y = torch.narrow(x, 1, -2, 2)", {"x": normal((2, 4))}, lambda x: x[:, 2:4], {}),
    # constructors: constants of the program; linspace is differentiable in its ends
    ("y = x * np.ones((2, 3)) + np.zeros(3) + np.full((2, 1), 2.0)", {"x": normal((2, 3))}, lambda x: x + 2.0, {}),
    ("y = x @ np.eye(3, 2, k=-1) + np.identity(2)", {"x": normal((2, 3))},
     lambda x: x @ np.eye(3, 2, k=-1) + np.identity(2), {}),
    ("y = x * np.arange(3) + np.arange(1, 2, 0.5)[1]", {"x": normal((2, 3))}, lambda x: x * np.arange(3) + 1.5, {}),
    ("y = x * np.tri(2, 3, 1)", {"x": normal((2, 3))}, lambda x: x * np.tri(2, 3, 1), {}),
    ("y = x * x + np.zeros_like(x) + np.ones_like(x) + np.full_like(x, 3)", {"x": normal((2, 3))},
     lambda x: x * x + 4, {}),
    ("y = np.linspace(a, b, 5)", {"a": normal(()), "b": normal(())}, lambda a, b: np.linspace(a, b, 5), {}),
    ("y = np.linspace(a, b, 4, endpoint=False)", {"a": normal((2,)), "b": normal(())},
     lambda a, b: np.linspace(a, b, 4, endpoint=False), {}),
    ("y = np.linspace(a, b, 1)", {"a": normal((2,)), "b": normal((2,))}, lambda a, b: np.linspace(a, b, 1), {}),
    ("p, q = np.meshgrid(a, b)\ny = p * q * p", {"a": normal((3,)), "b": normal((2,))},
     lambda a, b: np.meshgrid(a, b)[0] ** 2 * np.meshgrid(a, b)[1], {}),
    ("y = torch.meshgrid(a, b)[0] * 2", {"a": normal((3,)), "b": normal((2,))},
     lambda a, b: np.meshgrid(a, b, indexing="ij")[0] * 2, {}),
    # floating-point parts
    ("m, e = np.frexp(x)\ny = m * e", {"x": away()}, lambda x: np.frexp(x)[0] * np.frexp(x)[1], {}),
    ("f, i = np.modf(x)\ny = f * f + i", {"x": away()}, lambda x: np.modf(x)[0] ** 2 + np.modf(x)[1], {}),
    ("y = np.ldexp(x, [1, -2, 3])", {"x": normal((2, 3))}, lambda x: np.ldexp(x, [1, -2, 3]), {}),
    ("y = x * np.array_equal(x, x) + np.array_equiv(x, x[0])", {"x": normal((2, 3))}, lambda x: x, {}),
]


@pytest.mark.parametrize("program,inputs,reference,options", CASES, ids=[c[0] for c in CASES])
def test_op(program, inputs, reference, options):
    rng = np.random.default_rng(sum(map(ord, program)))
    check_op_case(program, inputs, reference, rng, **options)


def grad(program, seed=None, wrt=("x",), **feeds):
    result = api.grad(program, wrt=list(wrt), feeds={k: np.asarray(v, dtype=float) for k, v in feeds.items()},
                      grad_ys=None if seed is None else {"y": np.asarray(seed, dtype=float)})
    return result.outputs["y"], result.gradients


def test_gathers_add_up_the_gradient_at_repeated_indices():
    _, g = grad("y = np.take(x, [1, 1, 0, 1])", seed=[1, 2, 3, 4], x=[5, 6, 7])
    np.testing.assert_array_equal(g["x"], [3, 7, 0])
    _, g = grad("y = np.repeat(x, [3, 0, 1])", seed=[1, 2, 3, 4], x=[5, 6, 7])
    np.testing.assert_array_equal(g["x"], [6, 0, 4])
    _, g = grad("y = np.pad(x, 2, mode='wrap')", x=[5, 6])
    np.testing.assert_array_equal(g["x"], [3, 3])


def test_constructors_pass_no_gradient():
    r = api.grad("y = np.sum(np.zeros_like(x) + np.ones_like(x) * 2)", wrt=["x"], feeds={"x": np.ones(3)},
                 unconnected="zero")
    np.testing.assert_array_equal(r.gradients["x"], [0, 0, 0])
    assert api.evaluate("y = np.eye(2)").outputs["y"].tolist() == [[1, 0], [0, 1]]
    np.testing.assert_array_equal(api.evaluate("y = np.arange(5)").outputs["y"], np.arange(5.0))
    np.testing.assert_array_equal(api.evaluate("y = np.arange(1, 2, 0.25)").outputs["y"], np.arange(1, 2, 0.25))


def test_split_counts_parts_in_numpy_sizes_them_in_torch_and_lists_sizes_in_tensorflow():
    x = np.arange(6.0)
    def parts(program):
        out = api.evaluate(program, feeds={"x": x}).outputs["y"]
        return np.asarray(out).tolist()
    assert parts("y = np.split(x, 2)[0]") == [0, 1, 2]           # 2 parts
    assert parts("y = torch.split(x, 2)[0]") == [0, 1]           # parts of size 2
    assert parts("y = tf.split(x, 2)[0]") == [0, 1, 2]           # 2 parts
    assert parts("y = np.split(x, [2, 3])[1]") == [2]            # cut at 2 and 3
    assert parts("y = tf.split(x, [2, 3, 1])[1]") == [2, 3, 4]   # sizes 2, 3, 1
    assert parts("y = torch.split(x, [2, 3, 1])[1]") == [2, 3, 4]
    assert parts("y = x.split(4)[1]") == [4, 5]                  # NumPy arrays have no .split: PyTorch's
    assert parts("y = torch.chunk(x, 4)[2]") == [4, 5]           # chunks of ceil(6 / 4) = 2: only 3 of them
    assert len(api.evaluate("a, b, c = torch.chunk(x, 4)\ny = c", feeds={"x": x}).outputs["y"]) == 2


def test_sequences_are_lists_tuples_or_arrays_by_position_or_keyword():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    def out(program):
        return np.asarray(api.evaluate(program, feeds={"a": a, "b": b}).outputs["y"])
    np.testing.assert_array_equal(out("y = tf.concat(values=[a, b[None]], axis=0)"), np.vstack([a, b]))
    np.testing.assert_array_equal(out("y = torch.cat(tensors=(a, a), dim=1)"), np.hstack([a, a]))
    np.testing.assert_array_equal(out("y = np.select(choicelist=[a], condlist=[a > 2])"), np.where(a > 2, a, 0))
    np.testing.assert_array_equal(out("y = np.stack(a)"), a)                       # an array: its rows
    np.testing.assert_array_equal(out("y = np.concatenate([[1, 2], [3]])"), [1, 2, 3])


def test_library_spellings_that_differ_from_numpy():
    x = np.arange(6.0).reshape(2, 3)
    def out(program):
        return np.asarray(api.evaluate(program, feeds={"x": x}).outputs["y"])
    np.testing.assert_array_equal(out("y = torch.squeeze(x, 0)"), x)           # not of length 1: kept
    np.testing.assert_array_equal(out("y = tf.gather(x, [1, 0])"), x[[1, 0]])   # axis 0 by default
    np.testing.assert_array_equal(out("y = np.take(x, [1, 0])"), [1, 0])        # flattened by default
    np.testing.assert_array_equal(out("y = torch.gather(x, 1, [[2], [0]])"), [[2], [3]])
    np.testing.assert_array_equal(out("y = torch.meshgrid(x[0], x[1, :2])[0]"), [[0, 0], [1, 1], [2, 2]])
    np.testing.assert_array_equal(out("y = np.meshgrid(x[0], x[1, :2])[0]"), [[0, 1, 2], [0, 1, 2]])
    np.testing.assert_array_equal(out("y = F.pad(x, (1, 0))"), np.pad(x, ((0, 0), (1, 0))))
    np.testing.assert_array_equal(out("y = tf.linalg.diag(x)"), np.stack([np.diag(r) for r in x]))
    np.testing.assert_array_equal(out("y = np.diag(x)"), [0, 4])
    np.testing.assert_array_equal(out("y = x.flatten()"), x.ravel())
    np.testing.assert_array_equal(out("y = torch.transpose(x[None], 0, 2)"), np.swapaxes(x[None], 0, 2))
    np.testing.assert_array_equal(out("y = torch.permute(x[None], (2, 0, 1))"), np.transpose(x[None], (2, 0, 1)))
    np.testing.assert_array_equal(out("y = np.transpose(x)"), x.T)
    np.testing.assert_array_equal(out("y = x * tf.range(3)"), x * np.arange(3))
    np.testing.assert_array_equal(out("y = torch.cat((x, x), 1)"), np.concatenate((x, x), 1))
    assert api.evaluate("y = tf.identity(x)", feeds={"x": x}).outputs["y"].shape == (2, 3)  # still the value


@pytest.mark.parametrize("program,words", [
    ("y = np.concatenate([x, x[0]])", "must have the same rank"),
    ("y = np.concatenate([x, x[:, :1]])", "shapes differ off axis 0"),
    ("y = np.concatenate([x, x], axis=2)", "axis 2 is out of range"),
    ("y = tf.concat([x, x])", "tf.concat(values, axis) needs its axis"),
    ("y = np.stack([x, x[0]])", "all input arrays must have the same shape"),
    ("y = np.split(x, 3)", "does not split into 3 equal parts"),
    ("y = np.split(x, 0)", "number of sections must be larger than 0"),
    ("y = tf.split(x, [1, 2])", "add up to 3, not the axis length 2"),
    ("y = torch.split(x, 0)", "split size must be positive"),
    ("y = split(x, 2)", "np.split(x, n) makes n parts"),
    ("y = tf.unstack(x, 3)", "num=3, but the axis has length 2"),
    ("y = lax.pad(x, 0.0, [(1, 1, 0), (0, 0, 0)])", "write jnp.pad"),
    ("y = torch.select(x, 0, 2)", "index 2 is out of range for dim 0 of length 2"),
    ("y = np.vsplit(x[0], 2)", "vsplit(): needs an array of rank 2 or more"),
    ("y = np.squeeze(x, 0)", "cannot squeeze axis 0: its length is 2"),
    ("y = np.repeat(x, -1)", "repeats must not be negative"),
    ("y = np.repeat(x, [1, 2, 3], axis=0)", "3 repeats for an axis of length 2"),
    ("y = x.repeat(2)", "x.repeat(...) reads two ways"),
    ("y = np.tile(x, -2)", "reps must not be negative"),
    ("y = np.pad(x, -1)", "pad widths must not be negative"),
    ("y = np.pad(x, 1, mode='mean')", "pad mode 'mean' is not supported"),
    ("y = np.pad(x, 1, mode='reflect', reflect_type='odd')", "reflect_type='odd' is not supported"),
    ("y = np.take(x, [4])", "index 4 is out of bounds for axis 0 with size 4"),
    ("y = np.take(x, [0.5])", "'indices' must be an integer"),
    # numbers no array can hold (each one a crash before)
    ("y = np.arange(inf)", "takes finite numbers written in the program, not inf"),
    ("y = np.arange(1e300)", "the result would have 1e+300 elements (at most 100,000,000)"),
    ("y = np.pad(x, 1e300)", "'pad_width' holds 1e+300, larger than any array's axis, size or index"),
    ("y = np.roll(x, 1e300)", "'shift' holds 1e+300"),
    ("y = np.tril(x, 1e300)", "k must be an integer, not 1e+300"),
    ("y = np.zeros(1e300)", "'shape' holds 1e+300"),
    ("y = torch.combinations(x[0], 1e300)", "r must be an integer, not 1e+300"),
    ("y = gather(x, [0])", "tf.gather(x, indices, axis=0) takes whole slices"),
    ("y = tf.gather(x, [0], batch_dims=1)", "batch_dims=1 is not supported"),
    ("y = np.diag(x[0, 0])", "diag: takes a vector or a matrix"),
    ("y = np.tril(x[0])", "needs a matrix"),
    ("y = np.diagonal(x, axis1=1, axis2=1)", "axis1 and axis2 cannot be the same"),
    ("y = lax.slice(x, [0, 0], [3, 1])", "do not fit shape (2, 2)"),
    ("y = slice(x, [0, 0], [1, 1])", "write lax.slice or tf.slice"),
    ("y = lax.dynamic_slice(x, [0, 0], [3, 1])", "sizes (3, 1) do not fit"),
    ("y = torch.narrow(x, 0, 1, 2)", "do not fit dim 0 of length 2"),
    ("y = np.empty((2, 2))", "uninitialized memory"),
    ("y = range(3)", "write np.arange(...) or tf.range(...)"),
    ("y = np.zeros((2, -1))", "negative dimensions are not allowed"),
    ("y = np.zeros(2, 3)", "the shape must be one argument"),
    ("y = np.zeros(2, 'int32')", "would change the numbers"),
    ("y = np.arange(0, 1, 0)", "the step must not be 0"),
    ("y = np.select([x > 0], [x, x])", "1 conditions and 2 choices"),
    ("y = np.meshgrid(x, x, indexing='yx')", "indexing must be 'xy' or 'ij'"),
    ("y = np.moveaxis(x, [0, 1], [0])", "name different numbers of axes"),
    ("y = np.rot90(x, axes=(0, 0))", "rot90: needs two different axes"),
    ("y = torch.gather(x, 1, [[0, 5], [0, 0]])", "out of bounds for dim 1"),
    ("y = F.unfold(x, 2)", "extracts image patches"),
    ("y = x.unfold(0, 3, 1)", "windows of size 3, step 1 do not fit"),
    ("y = torch.unflatten(x, 0, (3, -1))", "do not divide dim 0"),
    ("y = torch.select_scatter(x, x, 0, 0)", "does not fill the block of shape (2,)"),
])
def test_bad_arguments_are_user_errors_at_the_call(program, words):
    with pytest.raises(GradcliError) as info:
        api.evaluate("z = x * 1\n" + program, feeds={"x": np.ones((2, 2))})
    assert words in str(info.value), str(info.value)
    # a constant that is not an integer (or no array's size): at the constant itself
    at = program.index("1e300") + 1 if "holds" in words else 16 if "[0.5]" in program else 5
    assert (info.value.pos.line, info.value.pos.column) == (2, at)


@pytest.mark.parametrize("program, message, column", [
    ("y = np.r_[1:3, x]", "np.r_[...] with a range or '...' is not supported: join arrays, as in np.r_[a, b], "
                          "or write np.arange", 12),
    ("y = np.r_['r', x]", "np.r_[...] with the directive 'r' is not supported: join arrays, or write "
                          "np.concatenate(..., axis=...)", 11),
    ("y = np.c_", "np.c_ is not a value: it joins the arrays in its brackets, as in np.c_[a, b]", 5),
    ("y = np.c_[x, [1.0, 2.0, 3.0]]", "np.c_: the input arrays' shapes differ off axis 1: (2, 1), (3, 1)", 10),
])
def test_index_tricks_refuse_what_they_do_not_join(program, message, column):
    with pytest.raises(GradcliError) as info:
        api.evaluate(program, feeds={"x": np.ones(2)})
    assert message in str(info.value), str(info.value)
    assert (info.value.pos.line, info.value.pos.column) == (1, column)


def test_indices_given_as_values_are_checked_when_the_program_runs():
    with pytest.raises(GradcliError, match="out of bounds") as info:
        api.grad("y = np.take_along_axis(x, i, 0)", wrt=["x"], feeds={"x": np.ones(3), "i": np.array([3.0])})
    assert info.value.pos.line == 1
    with pytest.raises(GradcliError, match="must be integers"):
        api.evaluate("y = np.take_along_axis(x, i, 0)", feeds={"x": np.ones(3), "i": np.array([0.5])})


def test_splits_are_views_and_joins_are_new():
    from gradcli.ops import OPS
    assert OPS["index"].memory == "view" and OPS["diagonal"].memory == "view" and OPS["swapaxes"].view
    assert OPS["concatenate"].memory == "new" and not OPS["concatenate"].view
    assert OPS["tile"].memory == "new" and OPS["repeat"].memory == "new" and OPS["pad"].memory == "new"


@pytest.mark.parametrize("program", [
    "y = sum(np.concatenate([x, x * x]) ** 2)",
    "y = sum(np.select([x > 0], [x * x], 0.5))",
    "y = sum(np.take(x, [0, 0, 2]) ** 2)",
    "y = sum(tf.gather(x, [2, 0]) * x[0])",
    "y = sum(lax.slice(x, [1], [3]) ** 2)",
    "y = sum(np.pad(x, 2, mode='reflect') ** 2)",
    "y = sum(torch.gather(x, 0, [2, 2]) ** 2)",
    "y = sum(np.diag(np.diag(x)) ** 2) + sum(np.tile(x, 2) * np.roll(x, 1, axis=0).repeat(2, axis=0))",
    "a, b = np.broadcast_arrays(x, x[:, None])\ny = sum(a * b)",
    "p, q = np.meshgrid(x, x[:2])\ny = sum(p * q * q)",
    "m, e = np.frexp(x)\ny = sum(m * m * e)",
    "y = sum(torch.squeeze(x[None], 0) * np.take_along_axis(x, [2, 0, 2], 0))",
])
def test_derive_of_array_functions_round_trips(program):
    feeds = {"x": np.array([0.7, -1.3, 2.1])}
    printed = api.derive(program, wrt="x", feeds=feeds)
    got = next(iter(api.evaluate(printed).outputs.values()))
    np.testing.assert_allclose(got, api.grad(program, wrt=["x"], feeds=feeds).gradients["x"], rtol=1e-14,
                               err_msg=printed)


# the modules of the shape and array functions (gradcli/ops/array.py and its continuations)
ARRAY_FAMILY = ("gradcli.ops.array", "gradcli.ops.selection", "gradcli.ops.creation")


def test_no_argument_makes_an_array_function_crash():
    """Random calls of every op of the family, with arrays, numbers, lists, strings and None in
    every position: each evaluates or is a GradcliError (a user error), never an exception."""
    import random

    from gradcli.language.dialects import callable_ops
    callable = callable_ops()
    names = sorted(n for n, o in callable.items()
                   if getattr(o.forward, "__module__", None) in ARRAY_FAMILY
                   or getattr(o.parts, "__module__", None) in ARRAY_FAMILY)
    arrays = ["s", "v", "m", "t", "e", "[m, m]", "(v, v)", "[v, m]", "[]", "m > 1"]
    values = ["0", "1", "-1", "2", "-5", "[0, 1]", "(2, 1)", "[[0, 1], [1, 0]]", "None", "'reflect'", "'ij'", "0.5",
              "[]", "[-1, 2]", "True", "((1, 0), (0, 2))", "[2, 0, 1]"]
    feeds = {"s": np.float64(1.5), "v": np.arange(4.0) - 1, "m": np.arange(6.0).reshape(2, 3), "t": np.ones((2, 2, 2)),
             "e": np.zeros((0, 2))}
    rng = random.Random(7)
    for _ in range(600):
        name = rng.choice(names)
        op = callable[name]
        count = rng.randint(0, 3) if op.variadic or rng.random() < 0.2 else len(op.args)
        args = [rng.choice(arrays) for _ in range(count)]
        args += [f"{p}={rng.choice(values)}" for p in op.params if p != "counts" and rng.random() < 0.5]
        program = f"y = {rng.choice(['np.', 'tf.', 'torch.', 'lax.', '', 'F.'])}{name}({', '.join(args)})"
        try:
            api.evaluate(program, feeds=feeds)
            used = [n for n in ("v", "m", "t") if n in program]
            if used:
                api.grad(program, wrt=used, feeds=feeds, unconnected="zero")
        except GradcliError:
            pass


@pytest.mark.parametrize("program,shape", [
    ("y = np.arange(-1e300)", (0,)), ("y = np.arange(-3)", (0,)),
    ("y = torch.combinations(x, 2 ** 40)", (0, 2 ** 40)),  # more than the 3 elements: none
])
def test_empty_results_are_empty_without_allocating_for_their_arguments(program, shape):
    r = api.evaluate(program, feeds={"x": np.ones(3)})
    assert r.outputs["y"].shape == shape
