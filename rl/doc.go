// Package rl owns the learning side of spiral: rewards to advantages
// (SPIRAL's set-level advantage for search traces and per-set baseline for
// aggregation traces; GRPO; the aggregation-only and search-only
// ablations), loss settings, the training loop that reads top to bottom
// (rollout -> reward -> advantage -> loss -> optimiser step -> metrics ->
// checkpoint), and metrics. It also runs the supervised warm start
// (RunSFT), and owns a run directory's life: its lock (LockRun), resume
// and settings checks, and its logs (metrics.jsonl, eval.jsonl, sft.jsonl
// and their TensorBoard events).
package rl
