package onnx

import (
	"cmp"
	"fmt"
	"os"
	"slices"

	"github.com/spiral-rl/spiral/model/onnx/onnxpb"
)

// DataFile is an external data file that tensors of a model name.
type DataFile struct {
	// Path is the file (the model's directory joined with the tensors'
	// location), Size its size in bytes.
	Path string
	Size int64
	// Used is how many of its bytes the tensors hold, End where the last
	// of them ends (the largest offset + length).
	Used, End int64
}

// Trailing returns the bytes of f after its last tensor, when there are
// more than alignment could explain (64 KiB, the largest granule offsets
// are aligned to), else 0. Writers of external data put each tensor at
// the end of the file, after padding of less than one granule that
// aligns its offset, and write nothing after the last one (onnx's
// save_external_data, ONNX Runtime's external initializers, Save), so
// such bytes are no part of the model's data: the data file of another,
// larger model beside the graph, or the bytes of tensors that an edit of
// the graph dropped without rewriting its data file. The latter is a
// sound model, its tensors reading their own bytes, so Trailing reports
// rather than refuses.
func (f DataFile) Trailing() int64 {
	if n := f.Size - f.End; n > alignGranularity {
		return n
	}
	return 0
}

// DataFiles returns the external data files that m's tensors name, in
// path order, with their sizes and the bytes the tensors use (LoadGraph
// has checked every reference). The model file itself, which LoadGraph's
// references to its large inline tensors name, is not one of them.
func (m *Model) DataFiles() ([]DataFile, error) {
	type span struct{ off, end int64 }
	spans := map[string][]span{}
	var err error
	walkModelTensors(m.Proto, func(t *onnxpb.TensorProto) bool {
		if !IsExternal(t) || m.inFile[t] {
			return true
		}
		var path string
		var off, n int64
		if path, off, n, err = m.externalRange(t); err != nil {
			return false
		}
		spans[path] = append(spans[path], span{off, off + n})
		return true
	})
	if err != nil {
		return nil, err
	}
	files := make([]DataFile, 0, len(spans))
	for path, ss := range spans {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("onnx: %q: external data file: %w", m.path, err)
		}
		f := DataFile{Path: path, Size: st.Size()}
		// Used counts bytes that several tensors share once.
		slices.SortFunc(ss, func(a, b span) int { return cmp.Compare(a.off, b.off) })
		for _, s := range ss {
			if s.end > f.End {
				f.Used += s.end - max(s.off, f.End)
				f.End = s.end
			}
		}
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b DataFile) int { return cmp.Compare(a.Path, b.Path) })
	return files, nil
}
