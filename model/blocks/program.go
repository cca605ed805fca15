package blocks

import "fmt"

// Canonical names of a piece graph's values: inputs X(i) then weights
// W(j) (parameters, fed from the stores), outputs Y(k). A backward graph
// reads the forward graph's inputs and weights and G(k), the gradient of
// output GradOutputs[k], and writes autodiff.GradName(X(i)) and
// autodiff.GradName(W(j)).
func X(i int) string { return fmt.Sprintf("x%d", i) }

// W names a piece's j-th weight input.
func W(j int) string { return fmt.Sprintf("w%d", j) }

// Y names a piece's k-th output.
func Y(k int) string { return fmt.Sprintf("y%d", k) }

// G names a backward graph's k-th output-gradient input.
func G(k int) string { return fmt.Sprintf("g%d", k) }

// Program is a causal LM's training computation cut into pieces (see the
// package doc). Value names are the forward graph's.
type Program struct {
	// Graphs holds every distinct piece graph, serialized ONNX, by key.
	Graphs map[string][]byte `json:"-"`
	// Inputs are the graph inputs the program reads, in the forward
	// graph's order (input_ids, attention_mask, maybe position_ids).
	Inputs []string `json:"inputs"`
	// Prologue computes the side values (Step) from Inputs; nil when
	// there are none.
	Prologue *Piece `json:"prologue,omitempty"`
	// Embedding, when set, is the first activation: rows of a parameter
	// table gathered by token ids; the executor gathers and scatters it.
	Embedding *Embedding `json:"embedding,omitempty"`
	// Embed computes the first block's input when Embedding cannot (or
	// from Embedding's output, when something follows the gather).
	Embed *Piece `json:"embed,omitempty"`
	// Blocks are the layers, in order; each reads the previous one's
	// output.
	Blocks []Block `json:"blocks"`
	// Head turns the last block's output into logits.
	Head Head `json:"head"`
}

// Piece is one graph the executor runs: its canonical inputs X(i) are
// bound to the values Inputs[i], its weights W(j) to the parameters
// Weights[j], its outputs Y(k) to the values Outputs[k].
type Piece struct {
	Forward string   `json:"forward"`
	Inputs  []string `json:"inputs"`
	Weights []string `json:"weights,omitempty"`
	Outputs []string `json:"outputs"`
	// Backward is the key of the backward graph; "" when no gradient
	// flows through the piece.
	Backward string `json:"backward,omitempty"`
	// GradOutputs are the indices of the Outputs whose gradients the
	// backward reads (as G(0), G(1), ...).
	GradOutputs []int `json:"grad_outputs,omitempty"`
	// GradInputs are the indices of the Inputs whose gradients it writes;
	// GradWeights those of the Weights (the trained ones).
	GradInputs  []int `json:"grad_inputs,omitempty"`
	GradWeights []int `json:"grad_weights,omitempty"`
}

// Role says how an attention core's input is cut when the core runs on
// the queries q0..q1 of one attention head, which see the keys 0..q1.
// Operands are [..., T, d], the leading axes (batch, heads) broadcast
// among them.
type Role int

const (
	// RoleQueries: rows q0..q1 of axis -2.
	RoleQueries Role = iota
	// RoleKeys: rows 0..q1 of axis -2 (the keys and the values).
	RoleKeys
	// RoleScores: broadcast against the scores [..., T, T]: rows q0..q1
	// of axis -2 and columns 0..q1 of axis -1, each only where that axis
	// has T entries (an axis of 1 broadcasts).
	RoleScores
)

// Core is a block's attention core: queries against the transposed keys,
// a softmax, then the values; one output [..., T, d], rows along axis -2,
// its leading axes those of the operands broadcast.
type Core struct {
	Piece
	// Roles has one entry per input.
	Roles []Role `json:"roles"`
}

// Block is one layer: Input (the cut it starts from, kept through the
// step) to Output. Pre runs first; then Core (when found), in blocks of
// queries, Post, and Tail (when found). Without a core, Pre is the whole
// block.
type Block struct {
	Input  string `json:"input"`
	Output string `json:"output"`
	Pre    Piece  `json:"pre"`
	Core   *Core  `json:"core,omitempty"`
	Post   *Piece `json:"post,omitempty"`
	// Tail, when set, is the layer's last sub-layer (the MLP with its
	// norm and residual add): the nodes after the layer's last residual
	// cut, found to act on each position alone (see positionwiseTail). Its
	// one input is that cut (Post's output), its one output the block's;
	// the executor runs it on chunks of positions, fed as [1, ..., n,
	// width], so that the MLP's wide intermediates never exist for all
	// positions at once.
	Tail *Piece `json:"tail,omitempty"`
	// CoreNote says why no attention core was found (then the whole
	// layer runs at once, its attention over all positions).
	CoreNote string `json:"core_note,omitempty"`
}

// Embedding is Output = Gather(Table, Indices) along axis 0: Table a
// parameter [vocab, ...], Indices integer ids (a graph input or side
// value).
type Embedding struct {
	Table   string `json:"table"`
	Indices string `json:"indices"`
	Output  string `json:"output"`
}

// Head is the LM head with the loss, on the last block's output Input.
//
// Usually the logits are one MatMul of Input with a parameter table
// (Table; [vocab, hidden] through a Transpose when TableRows, else
// [hidden, vocab]): then the loss runs the two graphs of
// tableHeadGraphs, Stats over chunks of the loss positions and Grad over
// blocks of the vocabulary (see HeadHidden and the names after it).
// StatsLimited is Stats over the first HeadVocabLimit ids only, for a
// policy whose vocabulary is narrower than the logits.
//
// Otherwise Train is the key of an autodiff.HeadLossGraph, whose input
// X(0) is a chunk [1, n, hidden] of Input's positions and X(1).. are
// Inputs[1:] (side values); its outputs are the log-probabilities,
// entropies and loss of the chunk and the gradients of X(0) and of
// Weights[GradWeights[...]]. TrainLimited is the same graph with the
// softmax over the first autodiff.HeadVocabLimit ids only.
type Head struct {
	Input string `json:"input"`

	Table        string `json:"table,omitempty"`
	TableRows    bool   `json:"table_rows,omitempty"`
	TableTrained bool   `json:"table_trained,omitempty"`
	Stats        string `json:"stats,omitempty"`
	StatsLimited string `json:"stats_limited,omitempty"`
	Grad         string `json:"grad,omitempty"`

	Train        string   `json:"train,omitempty"`
	TrainLimited string   `json:"train_limited,omitempty"`
	Inputs       []string `json:"inputs,omitempty"`
	Weights      []string `json:"weights,omitempty"`
	GradWeights  []int    `json:"grad_weights,omitempty"`
}

// Pieces returns every piece of p in execution order (prologue, embed,
// each block's pre, core, post and tail), for iteration.
func (p *Program) Pieces() []*Piece {
	var out []*Piece
	if p.Prologue != nil {
		out = append(out, p.Prologue)
	}
	if p.Embed != nil {
		out = append(out, p.Embed)
	}
	for i := range p.Blocks {
		b := &p.Blocks[i]
		out = append(out, &b.Pre)
		if b.Core != nil {
			out = append(out, &b.Core.Piece)
		}
		if b.Post != nil {
			out = append(out, b.Post)
		}
		if b.Tail != nil {
			out = append(out, b.Tail)
		}
	}
	return out
}
