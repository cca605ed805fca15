// Package rl owns the learning side of spiral: rewards to advantages
// (SPIRAL's set-level advantage for search traces and per-set baseline for
// aggregation traces; GRPO; the aggregation-only ablation), loss settings,
// the training loop that reads top to bottom (rollout -> reward ->
// advantage -> loss -> optimiser step -> metrics -> checkpoint), and
// metrics.
package rl
