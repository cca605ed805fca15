package data

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
)

// Cursor is a Stream's position, saved in checkpoints: Position problems
// of epoch Epoch have been handed out; the permutation of each epoch is
// derived from (Seed, Epoch). Size and Digest, when set, are the length
// of the dataset the cursor was taken on and the digest of its problems
// (ProblemsDigest), checked by Restore: a position means nothing in other
// problems, even as many.
type Cursor struct {
	Epoch    int    `json:"epoch"`
	Position int    `json:"position"`
	Seed     uint64 `json:"seed"`
	Size     int    `json:"size,omitempty"`
	Digest   string `json:"digest,omitempty"`
}

// epochStream is the PCG stream selector mixed with the epoch number, so
// that epoch 0 of seed s and the plain PCG(s, 0) stream differ.
const epochStream = 0x9E3779B97F4A7C15

// Stream hands out the problems of a Dataset in shuffled epochs. Each
// epoch is a fresh permutation that depends only on (seed, epoch), so a
// Stream restored from a Cursor continues exactly as the original would
// have. It is not safe for concurrent use.
type Stream struct {
	ds     *Dataset
	digest string // ProblemsDigest(ds.Problems)
	seed   uint64
	epoch  int
	pos    int
	perm   []int // permutation of the current epoch
}

// NewStream returns a Stream at the start of epoch 0. It panics if ds has
// no problems (Load never returns such a Dataset).
func NewStream(ds *Dataset, seed uint64) *Stream {
	if ds == nil || len(ds.Problems) == 0 {
		panic("data: NewStream: empty dataset")
	}
	s := &Stream{ds: ds, digest: ProblemsDigest(ds.Problems), seed: seed}
	s.perm = EpochPermutation(len(ds.Problems), seed, 0)
	return s
}

// ProblemsDigest fingerprints problems by content: their statements and
// gold answers, in order, not their ids (which a file without them takes
// from its name and row numbers); the first 16 bytes of a SHA-256, in
// hex. Eval reports record it (report.Meta.ProblemsDigest), as do
// eval.jsonl's lines, a checkpoint's record of the held-out problems and
// its data cursor.
func ProblemsDigest(problems []Problem) string {
	h := sha256.New()
	for _, p := range problems {
		// Lengths first, so that no two lists hash the same text.
		fmt.Fprintf(h, "%d:%s%d:%s", len(p.Problem), p.Problem, len(p.Answer), p.Answer)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// EpochPermutation returns the visiting order of epoch of a dataset of n
// problems: a Fisher-Yates permutation drawn from PCG(seed, epoch ^
// 0x9E3779B97F4A7C15).
func EpochPermutation(n int, seed uint64, epoch int) []int {
	r := rand.New(rand.NewPCG(seed, uint64(epoch)^epochStream))
	return r.Perm(n)
}

// Next returns the next n problems, crossing into the next epoch (a new
// permutation) when the current one is used up; so n may exceed the
// dataset size. n <= 0 returns nil.
func (s *Stream) Next(n int) []Problem {
	if n <= 0 {
		return nil
	}
	out := make([]Problem, 0, n)
	for len(out) < n {
		if s.pos == len(s.perm) {
			s.epoch++
			s.pos = 0
			s.perm = EpochPermutation(len(s.ds.Problems), s.seed, s.epoch)
		}
		out = append(out, s.ds.Problems[s.perm[s.pos]])
		s.pos++
	}
	return out
}

// Cursor returns the current position.
func (s *Stream) Cursor() Cursor {
	return Cursor{Epoch: s.epoch, Position: s.pos, Seed: s.seed, Size: len(s.ds.Problems), Digest: s.digest}
}

// Restore moves the sampler to c, adopting c.Seed. It fails when c does not
// fit the dataset (negative fields, a position past the end, or a Size or
// Digest not the dataset's).
func (s *Stream) Restore(c Cursor) error {
	n := len(s.ds.Problems)
	switch {
	case c.Epoch < 0 || c.Position < 0:
		return fmt.Errorf("data: restore position: negative epoch %d or position %d", c.Epoch, c.Position)
	case c.Size != 0 && c.Size != n:
		return fmt.Errorf("data: restore position: taken on %d problems, the dataset has %d", c.Size, n)
	case c.Digest != "" && c.Digest != s.digest:
		return fmt.Errorf("data: restore position: taken on other problems (digest %s, the dataset's %s)", c.Digest, s.digest)
	case c.Position > n:
		return fmt.Errorf("data: restore position: position %d past the dataset's %d problems", c.Position, n)
	}
	s.seed, s.epoch, s.pos = c.Seed, c.Epoch, c.Position
	s.perm = EpochPermutation(n, s.seed, s.epoch)
	return nil
}
