//go:build unix

package data

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoadPipe reads each format from a named pipe, as a shell's process
// substitution gives one (--data <(zcat rows.jsonl.gz)): the same dataset
// as from the file, where it was "read ...: illegal seek".
func TestLoadPipe(t *testing.T) {
	jsonl := writeFile(t, "rows.jsonl", "\xEF\xBB\xBF"+`{"problem": "1+1?", "answer": 2}`+"\r\n"+`{"problem": "2+2?", "answer": "4"}`+"\n")
	long := writeFile(t, "long.jsonl", `{"problem": "`+strings.Repeat("x", 5000)+`", "answer": 2}`+"\n"+`{"problem": "2+2?", "answer": "4"}`+"\n")
	jsonArray := writeFile(t, "rows.json", "[\n"+`{"problem": "1+1?", "answer": 2},`+"\n"+`{"problem": "2+2?", "answer": "4"}`+"\n]\n")
	for _, tc := range []struct {
		name, file, pipe string
		opt              LoadOptions
	}{
		{"jsonl by extension", jsonl, "rows.jsonl", LoadOptions{}},
		{"jsonl sniffed", jsonl, "63", LoadOptions{}},
		{"jsonl with a first row of more than 4 KiB sniffed", long, "63", LoadOptions{}},
		{"json sniffed", jsonArray, "63", LoadOptions{}},
		{"json by --format", jsonArray, "63", LoadOptions{Format: FormatJSON}},
		{"parquet sniffed", "testdata/verl.parquet", "63", LoadOptions{}},
		{"parquet by extension", "testdata/flat.parquet", "flat.parquet", LoadOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content, err := os.ReadFile(tc.file)
			require.NoError(t, err)
			fifo := filepath.Join(t.TempDir(), tc.pipe)
			want, err := LoadBytes(fifo, content, tc.opt)
			require.NoError(t, err)
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			done := make(chan error, 1)
			go func() {
				w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err == nil {
					_, err = w.Write(content)
					if cerr := w.Close(); err == nil {
						err = cerr
					}
				}
				done <- err
			}()
			got, err := Load(fifo, tc.opt)
			werr := <-done
			require.NoError(t, err)
			require.NoError(t, werr)
			require.Equal(t, want, got)
		})
	}
}
