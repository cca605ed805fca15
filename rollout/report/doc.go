// Package report writes the evaluation reports of `spiral eval`: one JSON
// document per run and plots (PNG, SVG or PDF by the file's extension,
// writeFigure) in the style of the SPIRAL and RSA papers' figures. It also
// keeps what an evaluation saves as it goes, to resume it (resume.go,
// rsaresume.go) and its traces (TraceWriter), computes `spiral compare`'s
// comparisons of reports (compare.go, seeds.go, bootstrap.go) and plots
// training runs' curves (PlotTraining).
//
// Conventions:
//   - a report is the caller's Meta (model, dataset, the problems' ids,
//     seed, timestamp: the caller supplies them, nothing here reads the
//     clock) plus the rollout result of one mode (RSA, PassAtK, Budget),
//     serialised with the rollout types' JSON field names;
//   - reports and plots are written atomically: to a temporary file in the
//     target's directory, synced, then renamed over the target, so a reader
//     never sees a half-written report or plot (SaveRSA's state too); the
//     saved problems (ProblemsWriter; a last line cut short by a kill is
//     left out when read) and the traces (TraceWriter) are written line by
//     line to .partial files instead;
//   - accuracies are fractions in [0, 1] and are plotted on a [0, 1] y
//     axis; k and token budgets are plotted on a log2 x axis with ticks at
//     the measured powers of two; plot sizes are in pixels at 96 dpi;
//   - several reports may share one plot (e.g. a base and a trained model),
//     one colour per report, labelled by Meta.Label or else Meta.Model.
package report
