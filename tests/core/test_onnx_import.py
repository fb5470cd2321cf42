"""ONNX import: small graphs built in code with onnx.helper (nothing downloaded). Every test checks the layer
table's MAC and parameter totals against numbers computed by hand from the graph's own shapes and initializers."""

import json
import math

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from explorer.__main__ import main
from explorer.core.importers.onnx.convert import OnnxImportError, import_onnx
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model, ModelError, build_table

RNG = np.random.default_rng(0)
BN_BUFFERS = ("mean", "var")  # running statistics: buffers, not parameters (the batchnorm kind's convention)


def init(name, *shape, dtype=np.float32):
    return nh.from_array(RNG.standard_normal(shape).astype(dtype), name)


def ints(name, values):
    return nh.from_array(np.array(values, dtype=np.int64), name)


def scalar(name, value):
    return nh.from_array(np.array(value, dtype=np.float32), name)


def graph(nodes, inputs, outputs, inits, opset=17):
    model = h.make_model(h.make_graph(nodes, "g", inputs, outputs, inits), opset_imports=[h.make_opsetid("", opset)])
    return model.SerializeToString()


def inp(name, *shape, dtype=T.FLOAT):
    return h.make_tensor_value_info(name, dtype, list(shape))


def out(name, dtype=T.FLOAT):
    return h.make_tensor_value_info(name, dtype, None)


def totals(result, batch=1):
    table = build_table(result.model, Context(batch=batch))
    assert table.errors == []
    return table


def params_of(inits, skip=()):
    return sum(math.prod(t.dims) for t in inits
               if t.name not in skip and t.data_type == T.FLOAT and math.prod(t.dims) > 1)


# ----------------------------------------------------------------------------------------------- models
def cnn():
    inits = [init("W1", 16, 3, 3, 3), init("B1", 16), init("scale", 16), init("shift", 16), init("mean", 16),
             init("var", 16), init("Wf", 10, 16 * 16 * 16), init("Bf", 10)]
    nodes = [h.make_node("Conv", ["x", "W1", "B1"], ["c"], pads=[1, 1, 1, 1], name="conv1"),
             h.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["bn"], name="bn1"),
             h.make_node("Relu", ["bn"], ["r"], name="relu1"),
             h.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
             h.make_node("Flatten", ["p"], ["f"], name="flat"),
             h.make_node("Gemm", ["f", "Wf", "Bf"], ["y"], transB=1, name="fc")]
    return graph(nodes, [inp("x", "N", 3, 32, 32)], [out("y")], inits), inits


def test_cnn_maps_every_operator_and_matches_the_graph():
    data, inits = cnn()
    r = import_onnx(data)
    assert [(l.kind, l.name) for l in r.model.layers] == [
        ("conv2d", "conv1"), ("batchnorm", "bn1"), ("relu", "relu1"), ("maxpool", "pool1"), ("flatten", "flat"),
        ("dense", "fc")]
    assert r.model.layers[0].params == {"input_shape": (3, 32, 32), "out_channels": 16, "kernel_size": 3,
                                        "padding": 1, "bias": True}
    assert r.model.layers[5].params == {"input_shape": (4096,), "in_features": 4096, "out_features": 10,
                                        "bias": True}
    assert r.model.input_dict == {"channels": 3, "height": 32, "width": 32}
    macs = 16 * 32 * 32 * (3 * 3 * 3) + 4096 * 10
    params = (16 * 27 + 16) + 2 * 16 + (4096 * 10 + 10)
    t = totals(r)
    assert r.graph_macs == t.total("macs") == macs == 483_328
    assert r.graph_params == t.total("params") == params == params_of(inits, BN_BUFFERS) == 41_450
    # conv 2 MAC + bias, bn 2/elem, relu 1/elem, pool 4 per output, dense 2 MAC + bias
    assert t.total("flops") == 2 * macs + 16 * 1024 + 2 * 16 * 1024 + 16 * 1024 + 4 * 16 * 16 * 16 + 10
    assert totals(r, batch=8).total("macs") == 8 * macs
    assert r.unsupported == () and r.warnings == ()


def test_residual_block_keeps_each_branch_input_shape():
    inits = [init("Wa", 16, 8, 3, 3), init("Wb", 16, 16, 3, 3), init("Wp", 16, 8, 1, 1), init("Wf", 16, 10),
             init("Bf", 10)]
    nodes = [h.make_node("Conv", ["x", "Wa"], ["a"], pads=[1, 1, 1, 1], strides=[2, 2], name="conv_a"),
             h.make_node("Relu", ["a"], ["ar"], name="relu_a"),
             h.make_node("Conv", ["ar", "Wb"], ["b"], pads=[1, 1, 1, 1], name="conv_b"),
             h.make_node("Conv", ["x", "Wp"], ["p"], strides=[2, 2], name="proj"),
             h.make_node("Add", ["b", "p"], ["s"], name="residual"),
             h.make_node("Relu", ["s"], ["sr"], name="relu_out"),
             h.make_node("GlobalAveragePool", ["sr"], ["g"], name="gap"),
             h.make_node("Flatten", ["g"], ["f"], name="flat"),
             h.make_node("MatMul", ["f", "Wf"], ["m"], name="fc"),
             h.make_node("Add", ["m", "Bf"], ["y"], name="fc_bias")]
    r = import_onnx(graph(nodes, [inp("x", "batch", 8, 16, 16)], [out("y")], inits))
    t = totals(r)
    kinds = {l.name: l.kind for l in r.model.layers}
    assert kinds == {"conv_a": "conv2d", "relu_a": "relu", "conv_b": "conv2d", "proj": "conv2d", "residual": "add",
                     "relu_out": "relu", "gap": "global_avgpool", "flat": "flatten", "fc": "dense"}
    status = {l.name: s for l, s in zip(r.model.layers, t.status)}
    assert status["proj"].in_shape == (8, 16, 16)  # reads the block input, not conv_b's output
    assert status["proj"].out_shape == status["conv_b"].out_shape == status["residual"].in_shape == (16, 8, 8)
    assert status["gap"].out_shape == (16,)
    macs = 16 * 8 * 8 * (8 * 9) + 16 * 8 * 8 * (16 * 9) + 16 * 8 * 8 * 8 + 16 * 10
    assert r.graph_macs == t.total("macs") == macs
    assert r.graph_params == t.total("params") == params_of(inits)
    assert r.model.layers[-1].params["bias"] is True  # the Add of Bf folded into the dense layer
    assert t.total("other_flops") == 16 * 64 + 16 * 64 + 16 * 64 + 16 * 64 + 10  # relu, add, relu, gap, bias


def test_mlp_with_matmul_and_add_biases():
    inits = [init("W1", 64, 128), init("b1", 128), init("W2", 128, 10), init("b2", 10)]
    nodes = [h.make_node("MatMul", ["x", "W1"], ["h"], name="fc1"), h.make_node("Add", ["h", "b1"], ["hb"]),
             h.make_node("Relu", ["hb"], ["hr"], name="act"), h.make_node("MatMul", ["hr", "W2"], ["o"], name="fc2"),
             h.make_node("Add", ["b2", "o"], ["y"])]
    r = import_onnx(graph(nodes, [inp("x", "N", 64)], [out("y")], inits))
    assert [(l.kind, l.name) for l in r.model.layers] == [("dense", "fc1"), ("relu", "act"), ("dense", "fc2")]
    assert [l.params["bias"] for l in r.model.layers if l.kind == "dense"] == [True, True]
    assert r.model.input_dict == {"features": 64}
    t = totals(r)
    assert r.graph_macs == t.total("macs") == 64 * 128 + 128 * 10
    assert r.graph_params == t.total("params") == 64 * 128 + 128 + 128 * 10 + 10
    assert r.skipped == ()


def attention_graph(s=16, hidden=32, heads=4):
    d = hidden // heads
    inits = [init(f"W{p}", hidden, hidden) for p in "qkvo"] + [init(f"b{p}", hidden) for p in "qkvo"]
    inits += [ints("split_heads", [0, 0, heads, d]), ints("merge_heads", [0, 0, hidden]),
              scalar("scale", math.sqrt(d))]
    nodes = []
    for p in "qkv":
        nodes += [h.make_node("MatMul", ["x", f"W{p}"], [f"{p}0"], name=f"proj_{p}"),
                  h.make_node("Add", [f"{p}0", f"b{p}"], [f"{p}1"]),
                  h.make_node("Reshape", [f"{p}1", "split_heads"], [f"{p}2"])]
    nodes += [h.make_node("Transpose", ["q2"], ["q"], perm=[0, 2, 1, 3]),
              h.make_node("Transpose", ["k2"], ["kt"], perm=[0, 2, 3, 1]),
              h.make_node("Transpose", ["v2"], ["v"], perm=[0, 2, 1, 3]),
              h.make_node("MatMul", ["q", "kt"], ["scores"]),
              h.make_node("Div", ["scores", "scale"], ["scaled"]),
              h.make_node("Softmax", ["scaled"], ["probs"], axis=-1),
              h.make_node("MatMul", ["probs", "v"], ["ctx"]),
              h.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
              h.make_node("Reshape", ["ctx_t", "merge_heads"], ["merged"]),
              h.make_node("MatMul", ["merged", "Wo"], ["o0"], name="proj_o"),
              h.make_node("Add", ["o0", "bo"], ["y"])]
    return graph(nodes, [inp("x", "N", s, hidden)], [out("y")], inits), inits


def test_attention_pattern_is_labelled_and_counted():
    s, hidden, heads, d = 16, 32, 4, 8
    data, inits = attention_graph(s, hidden, heads)
    r = import_onnx(data)
    assert r.attention_patterns == 1
    names = [l.name for l in r.model.layers]
    assert names == ["proj_q", "proj_k", "proj_v", "attention0.scores", "attention0.scale", "attention0.softmax",
                     "attention0.context", "proj_o"]
    layers = {l.name: l for l in r.model.layers}
    scores, context = layers["attention0.scores"], layers["attention0.context"]
    assert (scores.kind, scores.repeat, scores.params) == (
        "matmul", heads, {"input_shape": (heads, s, d), "m": s, "n": s, "k": d, "weights": False})
    assert (context.kind, context.repeat) == ("matmul", heads)
    assert (context.params["m"], context.params["n"], context.params["k"]) == (s, d, s)
    assert layers["attention0.softmax"].kind == "softmax"
    assert layers["attention0.scale"].params["op_type"] == "Div"
    assert layers["attention0.scale"].params["flops"] == heads * s * s
    assert r.model.input_dict == {"tokens": s, "hidden": hidden}
    t = totals(r)
    macs = 4 * s * hidden * hidden + 2 * heads * s * s * d
    assert r.graph_macs == t.total("macs") == macs
    assert r.graph_params == t.total("params") == 4 * (hidden * hidden + hidden) == params_of(inits)
    assert totals(r, batch=3).total("macs") == 3 * macs
    assert dict(r.skipped) == {"Reshape": 4, "Transpose": 4}
    assert r.unsupported == ()


def test_unsupported_operators_are_listed_and_kept_with_their_sizes():
    nodes = [h.make_node("Relu", ["x"], ["r"], name="act"),
             h.make_node("TopK", ["r", "k"], ["vals", "idx"], axis=-1, name="top1"),
             h.make_node("TopK", ["x", "k"], ["vals2", "idx2"], axis=-1, name="top2"),
             h.make_node("Einsum", ["vals", "vals2"], ["y"], equation="ni,ni->n", name="dot")]
    outputs = [out("y"), out("idx", T.INT64), out("idx2", T.INT64)]
    r = import_onnx(graph(nodes, [inp("x", "N", 32)], outputs, [ints("k", [5])]))
    assert r.unsupported == (("TopK", 2), ("Einsum", 1))
    assert r.warnings == (("unsupported operators carried as opaque layers with their traffic and no work: "
                           "TopK x2, Einsum x1"),)
    layers = {l.name: l for l in r.model.layers}
    assert [l.kind for l in r.model.layers] == ["relu", "opaque", "opaque", "opaque"]
    top = layers["top1"].params
    assert top == {"input_shape": (32,), "op_type": "TopK", "input_elems": 32, "output_elems": 10,
                   "weight_elems": 0, "params": 0, "macs": 0, "flops": 0, "output_shape": (5,)}
    assert layers["dot"].params["input_elems"] == 10 and layers["dot"].params["output_shape"] == (1,)
    t = totals(r, batch=4)
    row = t.names.index("top1")
    assert (t.input_elems[row], t.output_elems[row], t.flops[row]) == (4 * 32, 4 * 10, 0)
    assert t.out_shapes[row] == (5,)
    assert r.graph_macs == t.total("macs") == 0


def test_decomposed_layernorm_gelu_and_silu_are_recognized():
    hidden, ffn = 16, 64
    inits = [init("gamma", hidden), init("beta", hidden), init("W1", hidden, ffn), init("W2", ffn, hidden),
             ints("axes", [-1]), scalar("two", 2.0), scalar("eps", 1e-5), scalar("sqrt2", math.sqrt(2)),
             scalar("one", 1.0), scalar("half", 0.5)]
    nodes = [h.make_node("ReduceMean", ["x", "axes"], ["mu"], name="/ln/ReduceMean"),
             h.make_node("Sub", ["x", "mu"], ["d"], name="/ln/Sub"),
             h.make_node("Pow", ["d", "two"], ["d2"], name="/ln/Pow"),
             h.make_node("ReduceMean", ["d2", "axes"], ["var"], name="/ln/ReduceMean_1"),
             h.make_node("Add", ["var", "eps"], ["ve"], name="/ln/Add"),
             h.make_node("Sqrt", ["ve"], ["sd"], name="/ln/Sqrt"),
             h.make_node("Div", ["d", "sd"], ["n"], name="/ln/Div"),
             h.make_node("Mul", ["n", "gamma"], ["ng"], name="/ln/Mul"),
             h.make_node("Add", ["ng", "beta"], ["ln"], name="/ln/Add_1"),
             h.make_node("MatMul", ["ln", "W1"], ["u"], name="up"),
             h.make_node("Mul", ["u", "half"], ["uh"], name="/act/Mul"),  # HF order: (x * 0.5) * (1 + erf(x/√2))
             h.make_node("Div", ["u", "sqrt2"], ["us"], name="/act/Div"),
             h.make_node("Erf", ["us"], ["ue"], name="/act/Erf"),
             h.make_node("Add", ["ue", "one"], ["u1"], name="/act/Add"),
             h.make_node("Mul", ["uh", "u1"], ["g"], name="/act/Mul_1"),
             h.make_node("MatMul", ["g", "W2"], ["dn"], name="down"),
             h.make_node("Sigmoid", ["dn"], ["sg"], name="/silu/Sigmoid"),
             h.make_node("Mul", ["dn", "sg"], ["y"], name="/silu/Mul")]
    r = import_onnx(graph(nodes, [inp("x", "N", 4, hidden)], [out("y")], inits, opset=18))
    assert [(l.kind, l.name) for l in r.model.layers] == [
        ("layernorm", "/ln"), ("dense", "up"), ("gelu", "/act"), ("dense", "down"), ("silu", "/silu")]
    assert r.model.layers[0].params == {"input_shape": (4, hidden), "num_features": hidden}
    t = totals(r)
    assert r.graph_macs == t.total("macs") == 2 * 4 * hidden * ffn
    assert r.graph_params == t.total("params") == 2 * hidden + 2 * hidden * ffn
    assert t.total("other_flops") == 6 * 4 * hidden + 8 * 4 * ffn + 4 * 4 * hidden


def test_embedding_positions_layernorm_and_tied_head():
    vocab, dim, s, max_pos = 100, 16, 8, 32
    inits = [init("E", vocab, dim), init("P", max_pos, dim), init("ln_w", dim), init("ln_b", dim),
             ints("one", 1), ints("zero", 0), ints("axis0", [0])]
    nodes = [h.make_node("Gather", ["E", "ids"], ["tok"], name="wte"),
             # position ids as exporters write them: Range(0, Shape(ids)[1]), which shape inference alone
             # cannot size; the importer folds the shape arithmetic
             h.make_node("Shape", ["ids"], ["shape"]), h.make_node("Gather", ["shape", "one"], ["len"]),
             h.make_node("Range", ["zero", "len", "one"], ["pos_ids"]),
             h.make_node("Unsqueeze", ["pos_ids", "axis0"], ["pos_ids2"]),
             h.make_node("Gather", ["P", "pos_ids2"], ["pos"], name="wpe"),
             h.make_node("Add", ["tok", "pos"], ["emb"], name="add_pos"),
             h.make_node("LayerNormalization", ["emb", "ln_w", "ln_b"], ["ln"], axis=-1, name="ln_f"),
             h.make_node("Transpose", ["E"], ["Et"], perm=[1, 0]),
             h.make_node("MatMul", ["ln", "Et"], ["y"], name="lm_head")]
    r = import_onnx(graph(nodes, [inp("ids", "batch", "seq", dtype=T.INT64)], [out("y")], inits),
                    dims={"seq": s})
    layers = {l.name: l for l in r.model.layers}
    assert list(layers) == ["wte", "add_pos", "ln_f", "lm_head"]
    assert layers["wte"].kind == "embedding" and layers["wte"].params == {
        "input_shape": (s,), "num_embeddings": vocab, "embedding_dim": dim}
    # the looked-up positions are a constant operand: s rows read, the whole table stored
    add = layers["add_pos"].params
    assert (add["weight_elems"], add["params"], add["flops"], add["output_shape"]) == (
        s * dim, max_pos * dim, s * dim, (s, dim))
    assert layers["ln_f"].params == {"input_shape": (s, dim), "num_features": dim}
    assert layers["lm_head"].params == {"input_shape": (s, dim), "in_features": dim, "out_features": vocab,
                                        "bias": False, "tied": True}
    assert r.model.input_dict == {"tokens": s}
    t = totals(r)
    assert r.graph_params == t.total("params") == vocab * dim + max_pos * dim + 2 * dim
    assert r.graph_macs == t.total("macs") == s * dim * vocab
    assert r.warnings == ()


def test_batch_axis_named_batch_need_not_lead():
    """Sequence-first inputs (S, batch, H): the axis named like a batch is the batch."""
    nodes = [h.make_node("MatMul", ["x", "W"], ["h"], name="fc"),
             h.make_node("Transpose", ["h"], ["y"], perm=[1, 0, 2])]
    r = import_onnx(graph(nodes, [inp("x", 6, "batch_size", 8)], [out("y")], [init("W", 8, 4)]))
    assert r.model.layers[0].params["input_shape"] == (6, 8)
    assert totals(r, batch=2).total("macs") == 2 * r.graph_macs == 2 * 6 * 8 * 4


def test_symbolic_sequence_needs_a_size():
    nodes = [h.make_node("Relu", ["x"], ["y"])]
    data = graph(nodes, [inp("x", "batch", "sequence", 8)], [out("y")], [])
    with pytest.raises(OnnxImportError, match=r"input 'x' dimension 1 is symbolic \('sequence'\)"):
        import_onnx(data)
    assert import_onnx(data, dims={"sequence": 12}).model.layers[0].params["input_shape"] == (12, 8)


def test_non_square_asymmetric_and_1d_convolutions():
    inits = [init("Wr", 8, 4, 1, 7), init("Wa", 8, 8, 3, 3), init("Ws", 8, 8, 3, 3), init("W1d", 6, 8, 5)]
    nodes = [h.make_node("Conv", ["x", "Wr"], ["r"], pads=[0, 3, 0, 3], name="row"),  # 1x7, keeps 10x10
             h.make_node("Conv", ["r", "Wa"], ["a"], pads=[0, 0, 1, 1], strides=[2, 2], name="tf_same"),  # 5x5
             h.make_node("Conv", ["a", "Ws"], ["s"], auto_pad="SAME_UPPER", strides=[2, 2], name="auto"),  # 3x3
             h.make_node("Reshape", ["s", "to_seq"], ["seq"]),
             h.make_node("Conv", ["seq", "W1d"], ["y"], pads=[2, 2], name="conv1d")]
    inits.append(ints("to_seq", [0, 8, 9]))
    r = import_onnx(graph(nodes, [inp("x", "N", 4, 10, 10)], [out("y")], inits))
    p = {l.name: l.params for l in r.model.layers}
    assert p["row"] == {"input_shape": (4, 10, 10), "out_channels": 8, "kernel_size": 1, "kernel_w": 7,
                        "padding_w": 3}
    assert p["tf_same"]["padding"] == 1 and p["auto"]["padding"] == 1  # (10 + 0 + 1 - 3) // 2 + 1 = 5
    assert p["conv1d"] == {"input_shape": (8, 1, 9), "out_channels": 6, "kernel_size": 1, "kernel_w": 5,
                           "padding_w": 2}
    t = totals(r)
    assert [s.out_shape for s in t.status] == [(8, 10, 10), (8, 5, 5), (8, 3, 3), (6, 1, 9)]
    macs = 8 * 100 * 4 * 7 + 8 * 25 * 8 * 9 + 8 * 9 * 8 * 9 + 6 * 9 * 8 * 5
    assert r.graph_macs == t.total("macs") == macs
    assert any("asymmetric padding" in w for w in r.warnings)


def test_sequence_first_layout_strips_the_right_axis():
    nodes = [h.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),  # (S, N, H)
             h.make_node("MatMul", ["xt", "W"], ["y"], name="fc")]
    r = import_onnx(graph(nodes, [inp("x", "N", 6, 8)], [out("y")], [init("W", 8, 4)]))
    assert r.model.layers[0].params["input_shape"] == (6, 8)
    assert totals(r, batch=5).total("macs") == r.graph_macs * 5 == 5 * 6 * 8 * 4


def test_opaque_layers_count_known_work_and_constant_operands():
    inits = [init("pos", 1, 6, 8), scalar("k", 3.0)]
    nodes = [h.make_node("Add", ["x", "pos"], ["a"], name="add_pos"),
             h.make_node("Mul", ["a", "k"], ["m"], name="scale"),
             h.make_node("ReduceSum", ["m", "axes"], ["s"], keepdims=0, name="sum"),
             h.make_node("Concat", ["s", "s"], ["y"], axis=-1, name="cat")]
    r = import_onnx(graph(nodes, [inp("x", "N", 6, 8)], [out("y")], inits + [ints("axes", [1])], opset=13))
    p = {l.name: l.params for l in r.model.layers}
    assert (p["add_pos"]["weight_elems"], p["add_pos"]["params"], p["add_pos"]["flops"]) == (48, 48, 48)
    assert (p["scale"]["weight_elems"], p["scale"]["params"], p["scale"]["flops"]) == (0, 0, 48)
    assert (p["sum"]["flops"], p["sum"]["output_shape"]) == (48, (8,))
    assert (p["cat"]["flops"], p["cat"]["input_elems"], p["cat"]["output_shape"]) == (0, 16, (16,))
    assert r.unsupported == ()
    assert r.graph_params == totals(r).total("params") == 48


def test_imported_model_is_a_valid_model_file():
    data, _ = attention_graph()
    model = import_onnx(data, name="tiny attention").model
    again = Model.from_dict(json.loads(json.dumps(model.to_dict())), "saved.json")
    assert again.to_dict() == json.loads(json.dumps(model.to_dict())) and again.name == "tiny attention"


# ----------------------------------------------------------------------------------------------- errors
def test_truncated_file(tmp_path):
    data, _ = cnn()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(OnnxImportError, match=r"cut\.onnx: truncated or corrupt ONNX file") as err:
        import_onnx(path)
    assert isinstance(err.value, ModelError)


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "model.onnx"
    path.write_text('{"format": 1, "name": "a JSON model"}\n')
    with pytest.raises(OnnxImportError, match=r"model\.onnx: not an ONNX model"):
        import_onnx(path)
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(OnnxImportError, match="empty"):
        import_onnx(tmp_path / "empty.onnx")


def test_missing_shape_names_the_node_and_tensor():
    nodes = [h.make_node("Relu", ["x"], ["r"]), h.make_node("Mystery", ["r"], ["m"], domain="custom.ops",
                                                            name="magic"),
             h.make_node("Relu", ["m"], ["y"])]
    model = h.make_model(h.make_graph(nodes, "g", [inp("x", "N", 4)], [out("y")]),
                         opset_imports=[h.make_opsetid("", 17), h.make_opsetid("custom.ops", 1)])
    with pytest.raises(OnnxImportError, match=r"node 1 'magic' \(custom\.ops::Mystery\): tensor 'm' has no static"):
        import_onnx(model.SerializeToString())


def test_dangling_input_is_named():
    nodes = [h.make_node("Add", ["x", "ghost"], ["y"], name="plus")]
    with pytest.raises(OnnxImportError, match=r"node 0 'plus' \(Add\) reads 'ghost'"):
        import_onnx(graph(nodes, [inp("x", "N", 4)], [out("y")], []))


# ----------------------------------------------------------------------------------------------- CLI
DEVICE = """format: 1
id: test-gpu
name: Test GPU
vendor: test
kind: gpu
peak: {fp16: 312 TFLOP/s}
memory:
  - {name: HBM, role: offchip, capacity: 80 GB, bandwidth: 2039 GB/s}
"""


def test_analyze_onnx_end_to_end(tmp_path, capsys):
    data, inits = cnn()
    (tmp_path / "cnn.onnx").write_bytes(data)
    (tmp_path / "gpu.yaml").write_text(DEVICE)
    code = main(["analyze", str(tmp_path / "cnn.onnx"), "--device", str(tmp_path / "gpu.yaml"), "--json",
                 "--batch", "4"])
    captured = capsys.readouterr()
    assert code == 0 and captured.err == ""
    result = json.loads(captured.out)
    assert result["model"]["name"] == "cnn"
    assert result["model"]["macs"] == 4 * 483_328 and result["model"]["params"] == params_of(inits, BN_BUFFERS)
    assert [row["name"] for row in result["results"][0]["layers"]] == ["conv1", "bn1", "relu1", "pool1", "flat", "fc"]


def test_analyze_reports_a_broken_onnx_file_in_one_line(tmp_path, capsys):
    data, _ = cnn()
    (tmp_path / "cut.onnx").write_bytes(data[:40])
    (tmp_path / "gpu.yaml").write_text(DEVICE)
    code = main(["analyze", str(tmp_path / "cut.onnx"), "--device", str(tmp_path / "gpu.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("hwexplorer: error: ") and "truncated or corrupt ONNX file" in err


def test_shared_initializers_are_counted_per_layer_with_a_note():
    """Exporters store identical tensors once (fresh norm scales); each layer still has its own parameters."""
    big = init("W", 512, 256)  # larger than the folding limit: its data never enters shape inference
    inits = [big, init("g", 512), init("b", 512)]
    nodes = [h.make_node("LayerNormalization", ["x", "g", "b"], ["n1"], name="ln1"),
             h.make_node("LayerNormalization", ["n1", "g", "b"], ["n2"], name="ln2"),
             h.make_node("MatMul", ["n2", "W"], ["y"], name="fc")]
    r = import_onnx(graph(nodes, [inp("x", "N", 4, 512)], [out("y")], inits))
    t = totals(r)
    assert r.graph_params == t.total("params") == 2 * 2 * 512 + 512 * 256
    assert r.warnings == (("2 initializer(s) are read by more than one layer and counted in each (exporters "
                           "store identical tensors once, e.g. freshly initialized norm scales); the file stores "
                           f"{2 * 512 + 512 * 256:,} unique parameter elements"),)
    assert r.graph_macs == t.total("macs") == 4 * 512 * 256


@pytest.mark.parametrize("patch, fragment", [
    ({"output_shape": [4, 0]}, "layers[0].output_shape: expected a list of positive whole numbers"),
    ({"output_shape": "4x4"}, "layers[0].output_shape: expected a list"),
    ({"op_type": 7}, "layers[0].op_type: expected the operator's name as text"),
    ({"macs": -1}, "layers[0].macs: must be at least 0"),
    ({"colour": 1}, "unknown parameter(s) colour for 'opaque'"),
])
def test_opaque_layer_fields_are_checked(patch, fragment):
    layer = {"kind": "opaque", "op_type": "TopK", "input_shape": [32], "output_shape": [5], **patch}
    with pytest.raises(ModelError) as err:
        Model.from_dict({"format": 1, "name": "m", "input": {"features": 32}, "layers": [layer]}, "m.json")
    assert fragment in str(err.value)


def test_opaque_defaults_take_the_input_tensor():
    model = Model.from_dict({"format": 1, "name": "m", "input": {"features": 32},
                             "layers": [{"kind": "opaque", "op_type": "Custom", "weight_elems": 10}]})
    t = build_table(model, Context(batch=2))
    assert (t.input_elems[0], t.output_elems[0], t.weight_elems[0], t.params[0], t.flops[0]) == (64, 64, 10, 10, 0)
    assert t.out_shapes[0] == (32,)


# ----------------------------------------------------------------------------------------- hostile attributes
def _old_solve_padding(size, k, s, d, out, total):
    """The search the closed form replaced (issue 24), kept here as the reference on small sizes."""
    from explorer.core.workload.layers.base import conv_out

    for p in sorted(range(total + d * k + s + 1), key=lambda p: (abs(2 * p - total), p)):
        if conv_out(size, k, s, p, d) == out:
            return p
    return None


def test_the_closed_form_padding_equals_the_search():
    from explorer.core.importers.onnx.windows import solve_padding

    cases = 0
    for size in (1, 2, 5, 7, 16):
        for k in (1, 2, 3, 5):
            for s in (1, 2, 3):
                for d in (1, 2, 3):
                    for out in range(0, 10):
                        for total in range(0, 9):
                            assert solve_padding(size, k, s, d, out, total) == _old_solve_padding(
                                size, k, s, d, out, total), (size, k, s, d, out, total)
                            cases += 1
    assert cases == 5 * 4 * 3 * 3 * 10 * 9


@pytest.mark.parametrize("dilation", [2**24, 2**40])
def test_a_huge_dilation_is_refused_at_once(tmp_path, dilation):
    """Issue 24: a 1.5 KB file with a Conv dilation of 2**24 took 41 s and 7 GB; 2**40 ended in MemoryError."""
    import resource
    import time

    w = init("w", 4, 3, 3, 3)
    node = h.make_node("Conv", ["x", "w"], ["y"], name="c", dilations=[dilation, dilation], pads=[0, 0, 0, 0])
    path = tmp_path / "hostile.onnx"
    path.write_bytes(graph([node], [inp("x", 1, 3, 8, 8)], [h.make_tensor_value_info("y", T.FLOAT, [1, 4, 4, 4])],
                           [w]))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    with pytest.raises(OnnxImportError, match=r"node 0 \(Conv 'c'\): dilations .* must be 2 whole numbers from 1 to"):
        import_onnx(path)
    assert time.perf_counter() - t0 < 1.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 50_000  # KiB: no list as long as the dilation


@pytest.mark.parametrize("size", [-1, 0, -7])
def test_a_non_positive_input_size_is_refused_not_read_as_one(tmp_path, size):
    """Issue 24: input dimensions of -1, 0 or -7 were analysed as 1."""
    w = init("w", 8, 16)
    path = tmp_path / "m.onnx"
    path.write_bytes(graph([h.make_node("MatMul", ["x", "w"], ["y"])], [inp("x", 1, size, 8)], [out("y")], [w]))
    with pytest.raises(OnnxImportError, match=rf"input 'x' dimension 1 is {size}; sizes are whole numbers >= 1"):
        import_onnx(path)
    code = main(["analyze", str(path), "--device", "nvidia-h100-sxm5"])
    assert code == 2
