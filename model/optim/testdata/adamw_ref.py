#!/usr/bin/env python3
"""Golden numbers for optim.AdamW from an independent numpy implementation.

This follows torch.optim.AdamW's single-tensor algorithm (PyTorch 2.x,
torch/optim/adamw.py, _single_tensor_adamw with amsgrad=False, maximize=False)
operation by operation, in float32 like PyTorch on float32 parameters:

    param *= 1 - lr*weight_decay
    exp_avg.lerp_(grad, 1-beta1)                 # m += (1-beta1)*(g-m)
    exp_avg_sq = beta2*exp_avg_sq + (1-beta2)*g*g
    step_size = lr / (1 - beta1**t)
    denom = sqrt(exp_avg_sq) / sqrt(1 - beta2**t) + eps
    param -= step_size * exp_avg / denom

Parameter groups as in the Go defaults: tensors of rank <= 1 get no weight
decay. torch is not installed on the build machine, hence numpy.

Run from this directory: python3 adamw_ref.py  (writes adamw_golden.json)
"""
import json

import numpy as np

rng = np.random.default_rng(7)
cfg = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.1}
shapes = {"layer.w": [3, 4], "layer.b": [4], "attn.q": [2, 2, 3], "norm.g": [5]}
steps = 6
lrs = [0.1 * (i + 1) / 3 if i < 3 else 0.05 for i in range(steps)]

weights = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
init = {n: w.copy() for n, w in weights.items()}
m = {n: np.zeros(s, np.float32) for n, s in shapes.items()}
v = {n: np.zeros(s, np.float32) for n, s in shapes.items()}
grads = []
history = []
for t in range(1, steps + 1):
    lr = lrs[t - 1]
    g_step = {}
    for n, s in shapes.items():
        # Mixed scales, including tiny and exactly-zero gradients.
        g = (rng.standard_normal(s) * 10.0 ** rng.integers(-6, 1, size=s)).astype(np.float32)
        g.flat[0] = 0.0
        g_step[n] = g
        p = weights[n]
        wd = cfg["weight_decay"] if len(s) > 1 else 0.0
        p *= np.float32(1 - lr * wd)
        m[n] += (g - m[n]) * np.float32(1 - cfg["beta1"])
        v[n] = v[n] * np.float32(cfg["beta2"]) + g * g * np.float32(1 - cfg["beta2"])
        step_size = lr / (1 - cfg["beta1"] ** t)
        denom = np.sqrt(v[n]) / np.float32((1 - cfg["beta2"] ** t) ** 0.5) + np.float32(cfg["eps"])
        p -= np.float32(step_size) * m[n] / denom
        assert p.dtype == np.float32 and m[n].dtype == np.float32 and v[n].dtype == np.float32
    grads.append({n: g.ravel().tolist() for n, g in g_step.items()})
    history.append({n: weights[n].ravel().tolist() for n in shapes})

out = {
    "config": cfg,
    "shapes": shapes,
    "lrs": lrs,
    "init": {n: w.ravel().tolist() for n, w in init.items()},
    "grads": grads,
    "weights_after_step": history,
    "exp_avg": {n: a.ravel().tolist() for n, a in m.items()},
    "exp_avg_sq": {n: a.ravel().tolist() for n, a in v.items()},
}
with open("adamw_golden.json", "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
