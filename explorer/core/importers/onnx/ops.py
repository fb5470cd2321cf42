"""Map ONNX operators to layer kinds (``docs/onnx-import.md`` lists what maps to what).

Every dynamic node becomes a layer, is absorbed into a recognized pattern (a decomposed layer norm, SiLU,
erf GELU, a bias add folded into its dense layer), is a no-work view (skipped and counted), or is carried as an
``opaque`` layer with its tensor sizes: with its work when it is known (element-wise arithmetic, reductions,
data movement, convolutions no layer kind expresses) and listed as *unsupported* when it is not. Every layer
carries its own ``input_shape`` so that branches keep their true shapes.
"""

from __future__ import annotations

import math
from collections import Counter

import onnx

from explorer.core.importers.onnx.graph import GraphInfo, Shape, reading_node
from explorer.core.importers.onnx.nodes import attr
from explorer.core.importers.onnx.patterns import Anchor, find_patterns
from explorer.core.importers.onnx.windows import check_window, pad_total, solve_padding
from explorer.core.workload.layers.base import conv_out
from explorer.core.workload.model import LayerSpec

VIEWS = {"Transpose", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Reshape", "Flatten"}
ACTIVATIONS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Gelu": "gelu", "Softmax": "softmax"}
ELEMENTWISE = {  # one FLOP per output element
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mean", "Sum", "Mod", "Equal", "Less", "Greater",
    "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not", "Where", "PRelu", "Exp", "Log", "Sqrt",
    "Reciprocal", "Neg", "Abs", "Erf", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Tan", "LeakyRelu", "Elu",
    "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Mish", "ThresholdedRelu", "IsNaN",
    "IsInf", "BitShift"}
REDUCTIONS = {  # one FLOP per input element
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "GlobalMaxPool", "GlobalLpPool", "CumSum"}
MOVEMENT = {  # no arithmetic: traffic only
    "Concat", "Split", "Slice", "Pad", "Cast", "CastLike", "Expand", "Tile", "Gather", "GatherElements",
    "GatherND", "DepthToSpace", "SpaceToDepth", "Trilu", "ScatterND", "ScatterElements"}


def clean(shape: Shape) -> tuple[int, ...]:
    return tuple(max(1, int(d)) for d in shape) or (1,)


class Mapper:
    def __init__(self, g: GraphInfo):
        self.g = g
        self.layers: list[LayerSpec] = []
        self.taken: set[str] = set()
        self.uses: Counter = Counter()  # parameter tensor -> layers reading it as a parameter
        self.param_elems = 0  # parameter elements the layers read, per layer (tied dense layers excluded)
        self.embedding_params: set[str] = set()
        self.unsupported: Counter = Counter()
        self.skipped: Counter = Counter()
        self.notes: Counter = Counter()
        self.warnings: list[str] = list(g.warnings)
        self.anchors: dict[int, Anchor] = {}  # node index -> the layer of a recognized pattern
        self.absorbed: set[int] = set()
        self.labels: dict[int, str] = {}
        self.attention_patterns = 0

    # -- bookkeeping
    def op_label(self, i: int) -> str:
        n = self.g.nodes[i]
        return n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}::{n.op_type}"

    def unique(self, base: str) -> str:
        name, k = base, 2
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name

    def claim(self, tensors) -> int:
        """Record a layer's parameter operands; returns their elements (what the layer counts as parameters)."""
        srcs = self.g.params_of(tensors)
        self.uses.update(srcs)
        elems = sum(self.g.param_numel[p] for p in srcs)
        self.param_elems += elems
        return elems

    def emit(self, i: int, kind: str, shape: Shape, *, param_tensors=(), name: str | None = None,
             repeat: int = 1, **params) -> None:
        label = self.unique(name or self.labels.get(i) or self.g.nodes[i].name or f"{self.g.nodes[i].op_type}_{i}")
        self.claim(param_tensors)
        if kind == "embedding":
            self.embedding_params |= self.g.params_of(param_tensors)
        items = (("input_shape", clean(shape)),) + tuple(params.items())
        self.layers.append(LayerSpec(kind, label, items, repeat))

    def static_numel(self, t: str) -> int:
        s = self.g.full.get(t)
        if s is not None and None not in s:
            return math.prod(s)
        return sum(self.g.param_numel[p] for p in self.g.sources.get(t, ()))

    def opaque(self, i: int, *, macs: int = 0, flops: int = 0, unsupported: bool = False) -> None:
        g, n = self.g, self.g.nodes[i]
        dyn = [t for t in n.input if t and g.is_dynamic(t)]
        static = [t for t in n.input if t and not g.is_dynamic(t)]
        outs = [t for t in n.output if t]
        outs = outs[:1] + [t for t in outs[1:] if None not in (g.full.get(t) or (None,))]  # optional outputs
        params = self.claim(static)
        out_shape = g.sample(outs[0], i) if outs else (1,)
        op = self.op_label(i)
        if unsupported:
            self.unsupported[op] += 1
        items = {"input_shape": clean(g.sample(dyn[0], i) if dyn else out_shape), "op_type": op,
                 "input_elems": sum(g.numel(t, i) for t in dyn), "output_elems": sum(g.numel(t, i) for t in outs),
                 "weight_elems": sum(self.static_numel(t) for t in static if g.sources.get(t)),
                 "params": params, "macs": int(macs), "flops": int(flops),
                 "output_shape": clean(out_shape)}
        name = self.unique(self.labels.get(i) or n.name or f"{n.op_type}_{i}")
        self.layers.append(LayerSpec("opaque", name, tuple(items.items())))

    # -- the walk
    def run(self) -> Mapper:
        found = find_patterns(self.g)
        self.anchors, self.absorbed, self.labels = found.anchors, found.absorbed, found.labels
        self.attention_patterns = found.attention
        for i, node in enumerate(self.g.nodes):
            if i in self.absorbed:
                continue
            with reading_node(self.g, i):
                if i in self.anchors:
                    a = self.anchors[i]
                    self.emit(i, a.kind, a.shape, param_tensors=a.param_tensors, name=a.name, **dict(a.params))
                elif not self.g.node_dynamic(i):
                    self.skipped["(constant and shape arithmetic)"] += 1
                else:
                    self.map_node(i, node)
        shared = sorted(p for p, n in self.uses.items() if n > 1)
        if shared:
            unique = sum(self.g.param_numel[p] for p in self.uses)
            self.warnings.append(
                f"{len(shared)} initializer(s) are read by more than one layer and counted in each (exporters store "
                f"identical tensors once, e.g. freshly initialized norm scales); the file stores {unique:,} "
                f"unique parameter elements")
        for note, count in sorted(self.notes.items()):
            self.warnings.append(f"{note} ({count} layer{'s' if count > 1 else ''})")
        return self

    def map_node(self, i: int, n: onnx.NodeProto) -> None:
        op, g = n.op_type, self.g
        if n.domain not in ("", "ai.onnx"):
            if n.domain == "com.microsoft" and op == "SimplifiedLayerNormalization":
                return self.norm(i, n, "rmsnorm")
            if n.domain == "com.microsoft" and op in ("Gelu", "FastGelu") and len([t for t in n.input if t]) == 1:
                return self.emit(i, "gelu", g.sample(n.input[0], i))
            return self.opaque(i, unsupported=True)
        handler = HANDLERS.get(op)
        if handler is not None:
            return handler(self, i, n)
        if op in VIEWS:
            self.skipped[op] += 1
        elif op in ELEMENTWISE:
            self.opaque(i, flops=sum(g.numel(t, i) for t in n.output if t))
        elif op in REDUCTIONS:
            self.opaque(i, flops=g.numel(n.input[0], i))
        elif op in MOVEMENT:
            self.opaque(i)
        elif op == "ConvTranspose":
            w = g.shape(n.input[1], i)
            self.opaque(i, macs=g.numel(n.input[0], i) * w[1] * math.prod(w[2:]))
        else:
            self.opaque(i, unsupported=True)

    # -- handlers
    def conv(self, i: int, n) -> None:
        g = self.g
        x, w, y = n.input[0], n.input[1], n.output[0]
        bias = len(n.input) > 2 and bool(n.input[2])
        ws, xs, ys = g.shape(w, i), g.sample(x, i), g.sample(y, i)
        kernel = list(ws[2:])
        macs = math.prod(ys) * ws[1] * math.prod(kernel)
        flops = math.prod(ys) if bias else 0
        nd = len(kernel)
        if g.is_dynamic(w) or nd not in (1, 2) or len(xs) != nd + 1 or len(ys) != nd + 1:
            self.notes["convolutions other than 1-D/2-D with constant weights: opaque (MACs counted)"] += 1
            return self.opaque(i, macs=macs, flops=flops)
        strides, dil = list(attr(n, "strides", [1] * nd)), list(attr(n, "dilations", [1] * nd))
        check_window(n, i, {"strides": strides, "dilations": dil}, nd)
        totals = [pad_total(n, a, nd, xs[a + 1], kernel[a], strides[a], dil[a], ys[a + 1]) for a in range(nd)]
        if nd == 1:  # (C, L) as a 1-high image
            xs, ys, kernel, strides, dil, totals = ((xs[0], 1, xs[1]), (ys[0], 1, ys[1]), [1] + kernel,
                                                    [1] + strides, [1] + dil, [(0, False)] + totals)
        if dil[0] != dil[1]:
            self.notes["convolutions with unequal dilations carried as opaque (MACs counted)"] += 1
            return self.opaque(i, macs=macs, flops=flops)
        pads = [solve_padding(xs[a + 1], kernel[a], strides[a], dil[0], ys[a + 1], totals[a][0]) for a in (0, 1)]
        if None in pads:
            self.notes["convolutions whose output size no symmetric padding reproduces carried as opaque"] += 1
            return self.opaque(i, macs=macs, flops=flops)
        if any(uneven for _, uneven in totals):
            self.notes["asymmetric padding replaced by the symmetric padding giving the same output size"] += 1
        p = {"out_channels": ys[0], "kernel_size": kernel[0]}
        if kernel[1] != kernel[0]:
            p["kernel_w"] = kernel[1]
        if strides[0] != 1:
            p["stride"] = strides[0]
        if strides[1] != strides[0]:
            p["stride_w"] = strides[1]
        if pads[0]:
            p["padding"] = pads[0]
        if pads[1] != pads[0]:
            p["padding_w"] = pads[1]
        if dil[0] != 1:
            p["dilation"] = dil[0]
        if attr(n, "group", 1) != 1:
            p["groups"] = attr(n, "group", 1)
        if bias:
            p["bias"] = True
        self.emit(i, "conv2d", xs, param_tensors=n.input[1:3], **p)

    def dense(self, i: int, a: str, k: int, n_out: int, weights: list[str], bias: bool) -> None:
        xs = self.g.sample(a, i)
        if not xs or xs[-1] != k:
            xs = (max(1, math.prod(xs) // k), k)
        w = self.g.params_of(weights[:1])
        p = {"in_features": k, "out_features": n_out, "bias": bias}
        if w and w <= self.embedding_params:  # the output head reuses the embedding matrix: counted there
            p["tied"] = True
            weights = weights[1:]
        self.emit(i, "dense", xs, param_tensors=weights, **p)

    def bias_after(self, y: str, n_out: int) -> str | None:
        """A following ``Add`` of a constant vector of ``n_out`` (a dense layer's bias): absorbed, its name."""
        g = self.g
        cons = g.consumers.get(y, [])
        if len(cons) != 1 or y in g.graph_outputs or g.nodes[cons[0]].op_type != "Add" or cons[0] in self.absorbed:
            return None
        add = g.nodes[cons[0]]
        other = add.input[1] if add.input[0] == y else add.input[0]
        s = g.full.get(other)
        if g.is_dynamic(other) or s is None or None in s or math.prod(s) != n_out or (s and s[-1] != n_out):
            return None
        self.absorbed.add(cons[0])
        return other

    def matmul_macs(self, i: int, n) -> int:
        a = self.g.shape(n.input[0], i)
        k = a[0] if n.op_type == "Gemm" and attr(n, "transA", 0) else a[-1]
        return math.prod(self.g.shape(n.output[0], i)) * k

    def matmul(self, i: int, n) -> None:
        g = self.g
        a, b, y = n.input[0], n.input[1], n.output[0]
        da, db = g.is_dynamic(a), g.is_dynamic(b)
        if da and not db and len(g.shape(b, i)) == 2:
            k, n_out = g.shape(b, i)
            bias = self.bias_after(y, n_out)
            return self.dense(i, a, k, n_out, [b] + ([bias] if bias else []), bias is not None)
        if db and not da and len(g.shape(a, i)) == 2:  # W @ x: the transposed GEMM x^T W^T, W as the weights
            m_w, k = g.shape(a, i)
            return self.emit(i, "matmul", g.sample(b, i), param_tensors=[a], m=g.numel(b, i) // k, n=m_w, k=k)
        if da and db:
            return self.batched_matmul(i, a, b, y)
        self.notes["matrix products with batched constant operands carried as opaque (MACs counted)"] += 1
        self.opaque(i, macs=self.matmul_macs(i, n))

    def batched_matmul(self, i: int, a: str, b: str, y: str) -> None:
        g = self.g
        sa, sb, sy = g.sample(a, i), g.sample(b, i), g.sample(y, i)
        k = sa[-1]
        m = sa[-2] if len(sa) >= 2 else 1
        n_out = sb[-1] if len(sb) >= 2 else 1
        groups = max(1, math.prod(sy) // (m * n_out))
        ga, gb = math.prod(sa[:-2]), math.prod(sb[:-2])
        if gb == 1:  # B shared by every group: one tall GEMM
            m, groups = m * groups, 1
        elif ga == 1:  # A shared: one wide GEMM
            n_out, groups = n_out * groups, 1
        self.emit(i, "matmul", sa, repeat=groups, m=m, n=n_out, k=k, weights=False)

    def gemm(self, i: int, n) -> None:
        g = self.g
        a, b = n.input[0], n.input[1]
        c = n.input[2] if len(n.input) > 2 and n.input[2] else None
        if not (g.is_dynamic(a) and not g.is_dynamic(b) and not attr(n, "transA", 0)):
            self.notes["Gemm with a transposed or constant A carried as opaque (MACs counted)"] += 1
            return self.opaque(i, macs=self.matmul_macs(i, n))
        bs = g.shape(b, i)
        k, n_out = (bs[1], bs[0]) if attr(n, "transB", 0) else bs
        weights = [b]
        if c is not None and g.is_dynamic(c):
            self.warnings.append(f"{g.where(i)}: C is an activation; the addition is not counted")
            c = None
        elif c is None:
            c = self.bias_after(n.output[0], n_out)
        if c is not None:
            weights.append(c)
        self.dense(i, a, k, n_out, weights, c is not None)

    def norm(self, i: int, n, kind: str) -> None:
        g = self.g
        x = n.input[0]
        full = g.shape(x, i)
        axis = attr(n, "axis", -1) % len(full)
        h = math.prod(full[axis:])
        rows = max(1, g.numel(x, i) // h)
        weights = [t for t in n.input[1:3 if kind == "layernorm" else 2] if t]
        if kind == "layernorm" and len(weights) < 2:
            self.notes["layer norms without a bias: the layernorm kind counts a bias the graph does not store"] += 1
        self.emit(i, kind, (rows, h), param_tensors=weights, num_features=h)

    def batchnorm(self, i: int, n) -> None:
        xs = self.g.sample(n.input[0], i)
        c = xs[0] if xs else 1
        shape = xs if len(xs) in (1, 3) else (c, max(1, math.prod(xs) // c), 1)
        # scale and bias are parameters; the running mean and variance are buffers (PyTorch's convention)
        self.emit(i, "batchnorm", shape, param_tensors=n.input[1:3], num_features=c)

    def activation(self, i: int, n) -> None:
        self.emit(i, ACTIVATIONS[n.op_type], self.g.sample(n.input[0], i))

    def clip(self, i: int, n) -> None:
        g = self.g
        lo, hi = attr(n, "min"), attr(n, "max")
        if len(n.input) > 1 and n.input[1]:
            lo = g.scalar(n.input[1])
        if len(n.input) > 2 and n.input[2]:
            hi = g.scalar(n.input[2])
        x = g.sample(n.input[0], i)
        if lo == 0 and hi == 6:
            return self.emit(i, "relu6", x)
        if lo == 0 and hi is None and not (len(n.input) > 2 and n.input[2]):
            return self.emit(i, "relu", x)
        self.opaque(i, flops=2 * math.prod(x))

    def pool(self, i: int, n) -> None:
        g = self.g
        xs, ys = g.sample(n.input[0], i), g.sample(n.output[0], i)
        kernel = list(attr(n, "kernel_shape", []))
        nd = len(kernel)
        strides, dil = list(attr(n, "strides", [1] * nd)), list(attr(n, "dilations", [1] * nd))
        if nd == 2 and len(xs) == 3 and len(ys) == 3 and kernel[0] == kernel[1] and strides[0] == strides[1] \
                and dil == [1, 1]:
            k, s = kernel[0], strides[0]
            totals = [pad_total(n, a, 2, xs[a + 1], k, s, 1, ys[a + 1])[0] for a in (0, 1)]
            p = solve_padding(xs[1], k, s, 1, ys[1], totals[0])
            if p is not None and conv_out(xs[2], k, s, p) == ys[2]:
                kind = "maxpool" if n.op_type == "MaxPool" else "avgpool"
                return self.emit(i, kind, xs, kernel_size=k, stride=s, **({"padding": p} if p else {}))
        self.opaque(i, flops=math.prod(ys) * math.prod(kernel))

    def global_avgpool(self, i: int, n) -> None:
        xs = self.g.sample(n.input[0], i)
        if len(xs) == 3:
            return self.emit(i, "global_avgpool", xs)
        self.opaque(i, flops=math.prod(xs))

    def binary(self, i: int, n) -> None:
        g = self.g
        a, b, y = n.input[0], n.input[1], n.output[0]
        if g.is_dynamic(a) and g.is_dynamic(b) and g.sample(a, i) == g.sample(b, i) == g.sample(y, i):
            return self.emit(i, "add" if n.op_type == "Add" else "multiply", g.sample(a, i))
        self.opaque(i, flops=g.numel(y, i))

    def view(self, i: int, n) -> None:
        g = self.g
        xs, ys = g.sample(n.input[0], i), g.sample(n.output[0], i)
        if len(ys) == 1 and len(xs) > 1:
            return self.emit(i, "flatten", xs)
        self.skipped[n.op_type] += 1

    def gather(self, i: int, n) -> None:
        g = self.g
        data, idx = n.input[0], n.input[1]
        table = not g.is_dynamic(data) and len(g.shape(data, i)) == 2 and attr(n, "axis", 0) in (0, -2)
        if table and g.is_dynamic(idx):
            v, d = g.shape(data, i)
            return self.emit(i, "embedding", (g.numel(idx, i),), param_tensors=[data], num_embeddings=v,
                             embedding_dim=d)
        self.opaque(i)


HANDLERS = {
    "Conv": Mapper.conv, "MatMul": Mapper.matmul, "Gemm": Mapper.gemm,
    "LayerNormalization": lambda m, i, n: m.norm(i, n, "layernorm"),
    "RMSNormalization": lambda m, i, n: m.norm(i, n, "rmsnorm"),
    "BatchNormalization": Mapper.batchnorm, "Clip": Mapper.clip, "MaxPool": Mapper.pool, "AveragePool": Mapper.pool,
    "GlobalAveragePool": Mapper.global_avgpool, "Add": Mapper.binary, "Mul": Mapper.binary,
    "Flatten": Mapper.view, "Reshape": Mapper.view, "Gather": Mapper.gather,
    **{op: Mapper.activation for op in ACTIVATIONS},
}
