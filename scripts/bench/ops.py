"""Where an ONNX Runtime call of spiral's sampling graph spends its time.

Runs the graph (sample.onnx of `spiral artifacts`, or decode.onnx, its
decode steps' graph) on random weights and a full KV cache of the given
shape, with ONNX Runtime's profiler on, and prints the mean time of a
call and each operator type's share of the kernel time. decode.onnx is
run as spiral runs it: one new position per row, the cache's buffers
bound as both past and present (updated in place), every row filled to
--capacity. A measurement aid only (never the product, never CI).
"""

import argparse
import collections
import json
import os
import tempfile

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--graph", required=True, help="sample.onnx or decode.onnx of spiral artifacts")
    ap.add_argument("--rows", type=int, required=True, help="rows of the call")
    ap.add_argument("--capacity", type=int, required=True, help="KV cache positions per row (all filled)")
    ap.add_argument("--new", type=int, default=1, help="new positions per row (1 = a decode step)")
    ap.add_argument("--calls", type=int, default=10, help="calls measured, after one warm-up")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--top", type=int, default=8, help="operator types listed")
    a = ap.parse_args()

    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(a.graph, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    decode = "spiral_seqlens_k" in names
    if decode and a.new != 1:
        raise SystemExit(f"{a.graph}: a decode graph takes one new position per row (--new 1)")
    # The decode graph's cache holds the new position too: its buffers are
    # capacity + 1 long, each row filled to capacity before the call.
    slots = a.capacity + 1 if decode else a.capacity
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        if i.name == "input_ids":
            feeds[i.name] = np.ones((a.rows, a.new), np.int64)
        elif i.name == "attention_mask":
            feeds[i.name] = np.ones((a.rows, a.capacity + a.new), np.int64)
        elif i.name == "position_ids":
            feeds[i.name] = np.tile(np.arange(a.capacity, a.capacity + a.new, dtype=np.int64), (a.rows, 1))
        elif i.name.startswith("past_key_values."):
            kv, d = i.shape[1], i.shape[3]
            feeds[i.name] = (rng.standard_normal((a.rows, kv, slots, d)) * 0.1).astype(np.float32)
        elif i.name == "spiral_seqlens_k":
            feeds[i.name] = np.full(a.rows, a.capacity, np.int32)
        elif i.name == "spiral_total_sequence_length":
            feeds[i.name] = np.array(a.capacity + 1, np.int32)
        else:  # a weight
            if not all(isinstance(x, int) for x in i.shape):
                raise SystemExit(f"{a.graph}: input {i.name!r} has shape {i.shape}: want a weight's fixed shape")
            feeds[i.name] = (rng.standard_normal(i.shape) * 0.02).astype(np.float32)

    def runner(sess):
        if not decode:
            return lambda: sess.run(None, feeds)
        # past and present bound to one buffer, as spiral binds them.
        io = sess.io_binding()
        for name, x in feeds.items():
            if name.startswith("past_key_values."):
                v = ort.OrtValue.ortvalue_from_numpy(x)
                io.bind_ortvalue_input(name, v)
                io.bind_ortvalue_output(name.replace("past_key_values.", "present."), v)
            else:
                io.bind_cpu_input(name, x)
        io.bind_output("logits")
        # The rows stay at --capacity: each call rewrites the same slot.
        return lambda: sess.run_with_iobinding(io)

    runner(sess)()  # warm-up, not profiled

    with tempfile.TemporaryDirectory() as tmp:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "ops")
        sess = ort.InferenceSession(a.graph, so, providers=["CPUExecutionProvider"])
        run = runner(sess)
        for _ in range(a.calls + 1):
            run()
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    # The first profiled call is a warm-up too; the rest are measured.
    runs = [e for e in events if e.get("cat") == "Session" and e["name"] == "model_run"]
    start = runs[1]["ts"] if len(runs) > 1 else 0
    per_op = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] >= start:
            per_op[e["args"]["op_name"]] += e["dur"]
    total = sum(per_op.values())
    wall = sum(r["dur"] for r in runs[1:]) / max(1, len(runs) - 1)
    print(f"{a.rows} rows x {a.new} new positions over {a.capacity} cached, {a.threads} thread(s): "
          f"{wall / 1000:.1f} ms a call ({total / a.calls / 1000:.1f} ms in kernels)")
    for op, t in per_op.most_common(a.top):
        print(f"  {op:<14} {100 * t / total:5.1f}%")


if __name__ == "__main__":
    main()
