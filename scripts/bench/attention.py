"""One decode step of one attention layer, two ways, on ONNX Runtime's CPU.

The way spiral's sampling graphs attend today (the export's own: Concat
of past and new keys and values, Expand over the query heads, MatMul,
Softmax, MatMul) against ONNX Runtime's GroupQueryAttention, with a new
present and with the cache updated in place (past and present bound to
one buffer): the design spiral's decode graph takes (model/inplacedecode.go).
Prints the time of each and the largest output difference. A measurement aid (never the
product, never CI); run it with the environment scripts/bench/ops.sh
makes, e.g. ~/.cache/spiral/opsvenv/bin/python scripts/bench/attention.py.
"""

import argparse
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--rows", type=int, default=16)
ap.add_argument("--capacity", type=int, default=1000, help="cached positions per row")
ap.add_argument("--heads", type=int, default=16, help="query heads (Qwen3-0.6B: 16)")
ap.add_argument("--kv-heads", type=int, default=8)
ap.add_argument("--head-dim", type=int, default=128)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--calls", type=int, default=20)
a = ap.parse_args()
B, H, KV, D, P = a.rows, a.heads, a.kv_heads, a.head_dim, a.capacity
G = H // KV


def base():
    nodes = [
        h.make_node("Concat", ["pk", "k"], ["K"], axis=2),
        h.make_node("Concat", ["pv", "v"], ["V"], axis=2),
        h.make_node("Unsqueeze", ["K", "ax2"], ["K5"]), h.make_node("Expand", ["K5", "shp"], ["Ke"]), h.make_node("Reshape", ["Ke", "shp4"], ["Kr"]),
        h.make_node("Unsqueeze", ["V", "ax2"], ["V5"]), h.make_node("Expand", ["V5", "shp"], ["Ve"]), h.make_node("Reshape", ["Ve", "shp4"], ["Vr"]),
        h.make_node("Transpose", ["Kr"], ["Kt"], perm=[0, 1, 3, 2]),
        h.make_node("MatMul", ["q", "Kt"], ["s"]), h.make_node("Softmax", ["s"], ["p"], axis=-1),
        h.make_node("MatMul", ["p", "Vr"], ["o"]),
    ]
    inits = [h.make_tensor("ax2", T.INT64, [1], [2]), h.make_tensor("shp", T.INT64, [5], [1, 1, G, 1, 1]),
             h.make_tensor("shp4", T.INT64, [4], [0, H, -1, D])]
    ins = [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in
           [("q", ["B", H, 1, D]), ("pk", ["B", KV, "P", D]), ("pv", ["B", KV, "P", D]), ("k", ["B", KV, 1, D]), ("v", ["B", KV, 1, D])]]
    outs = [h.make_tensor_value_info(n, T.FLOAT, None) for n in ["o", "K", "V"]]
    return h.make_model(h.make_graph(nodes, "base", ins, outs, inits), opset_imports=[h.make_opsetid("", 17)], ir_version=10)
def gqa():
    nodes = [h.make_node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "seqlens", "total"], ["o", "K", "V"],
                         domain="com.microsoft", num_heads=H, kv_num_heads=KV)]
    ins = [h.make_tensor_value_info(n, t, s) for n, t, s in
           [("q", T.FLOAT, ["B", 1, H * D]), ("k", T.FLOAT, ["B", 1, KV * D]), ("v", T.FLOAT, ["B", 1, KV * D]),
            ("pk", T.FLOAT, ["B", KV, "P", D]), ("pv", T.FLOAT, ["B", KV, "P", D]), ("seqlens", T.INT32, ["B"]), ("total", T.INT32, [])]]
    outs = [h.make_tensor_value_info(n, T.FLOAT, None) for n in ["o", "K", "V"]]
    return h.make_model(h.make_graph(nodes, "gqa", ins, outs), opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)], ir_version=10)
so = ort.SessionOptions()
so.intra_op_num_threads = a.threads
rng = np.random.default_rng(0)
q = rng.standard_normal((B, H, 1, D), np.float32); k = rng.standard_normal((B, KV, 1, D), np.float32); v = rng.standard_normal((B, KV, 1, D), np.float32)
pk = rng.standard_normal((B, KV, P, D), np.float32); pv = rng.standard_normal((B, KV, P, D), np.float32)
def bench(sess, feeds, n=a.calls):
    sess.run(None, feeds)
    t = time.perf_counter()
    for _ in range(n): sess.run(None, feeds)
    return (time.perf_counter() - t) / n * 1000
s1 = ort.InferenceSession(base().SerializeToString(), so, providers=["CPUExecutionProvider"])
t1 = bench(s1, dict(q=q * D**-0.5, k=k, v=v, pk=pk, pv=pv))
o1 = s1.run(["o"], dict(q=q * D**-0.5, k=k, v=v, pk=pk, pv=pv))[0]
s2 = ort.InferenceSession(gqa().SerializeToString(), so, providers=["CPUExecutionProvider"])
# GQA: past buffer holds P + 1 slots (P filled); seqlens = total length - 1.
pk2 = np.concatenate([pk, np.zeros((B, KV, 1, D), np.float32)], 2); pv2 = np.concatenate([pv, np.zeros((B, KV, 1, D), np.float32)], 2)
f2 = dict(q=q.transpose(0, 2, 1, 3).reshape(B, 1, H * D), k=k.transpose(0, 2, 1, 3).reshape(B, 1, KV * D), v=v.transpose(0, 2, 1, 3).reshape(B, 1, KV * D),
          pk=pk, pv=pv, seqlens=np.full(B, P, np.int32), total=np.array(P + 1, np.int32))
t2 = bench(s2, f2)
o2 = s2.run(["o"], f2)[0].reshape(B, 1, H, D).transpose(0, 2, 1, 3)
# Shared buffer: past and present bound to the same values of P + 1 slots.
io = s2.io_binding()
ovk, ovv = ort.OrtValue.ortvalue_from_numpy(pk2), ort.OrtValue.ortvalue_from_numpy(pv2)
for n in ["q", "k", "v", "seqlens", "total"]: io.bind_cpu_input(n, f2[n])
io.bind_ortvalue_input("pk", ovk); io.bind_ortvalue_input("pv", ovv)
io.bind_ortvalue_output("K", ovk); io.bind_ortvalue_output("V", ovv); io.bind_output("o")
s2.run_with_iobinding(io)
t = time.perf_counter()
for _ in range(a.calls):
    s2.run_with_iobinding(io)
t3 = (time.perf_counter() - t) / a.calls * 1000
print(f"one attention layer, {B} rows x 1 new over {P} cached, heads {H}/{KV} x {D}, {a.threads} thread(s):")
print(f"  Concat + Expand + MatMul/Softmax/MatMul: {t1:.2f} ms")
print(f"  GroupQueryAttention, new present:        {t2:.2f} ms   max |diff| {np.abs(o1 - o2).max():.2e}")
print(f"  GroupQueryAttention, shared buffer:      {t3:.2f} ms")
