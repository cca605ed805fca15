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

// TestLoadPipeRefusedByItsHead: a pipe or device whose opening bytes
// are no data file (/dev/zero, /dev/urandom, a binary stream) is refused
// by them, as a file is, before the rest is read: read whole first, an
// endless one took memory until none was left.
func TestLoadPipeRefusedByItsHead(t *testing.T) {
	for _, tc := range []struct {
		name, pipe string
		opt        LoadOptions
		chunk      []byte // the pipe's content, repeated
		want       string
	}{
		{"zeros", "zero", LoadOptions{}, make([]byte, 1<<16), "cannot detect the format"},
		{"gzip named", "rows.jsonl", LoadOptions{}, append([]byte("\x1f\x8b\x08\x00"), make([]byte, 1<<16)...), "gzip-compressed"},
		{"parquet given --format jsonl", "63", LoadOptions{Format: FormatJSONL}, append([]byte("PAR1"), make([]byte, 1<<16)...), "the file is Parquet"},
		// A format given, the head was not looked at past its format:
		// read whole, an endless pipe or device took memory until none
		// was left. Refused as a file of that content is.
		{"zeros given --format jsonl", "rows", LoadOptions{Format: FormatJSONL}, make([]byte, 1<<16), `rows:1: malformed JSON: invalid character '\x00' looking for beginning of value`},
		{"zeros given --format json", "rows", LoadOptions{Format: FormatJSON}, make([]byte, 1<<16), `rows:1: malformed JSON: invalid character '\x00' looking for beginning of value`},
		{"zeros given --format parquet", "rows", LoadOptions{Format: FormatParquet}, make([]byte, 1<<16), `rows: not a readable Parquet file: missing "PAR1" magic bytes`},
		{"rows, then bytes not UTF-8, named .jsonl", "rows.jsonl", LoadOptions{}, []byte(`{"problem": "p", "answer": "1"}` + "\n" + "\xff\xfe\xfd"), "rows.jsonl:2: byte 1 of the line (0xFF) is not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), tc.pipe)
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			// 256 MiB, far more than the head: written whole only where
			// Load reads it all.
			const total = 256 << 20
			done := make(chan error, 1)
			go func() {
				w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err != nil {
					done <- err
					return
				}
				defer w.Close()
				for n := 0; n < total; n += len(tc.chunk) {
					if _, err := w.Write(tc.chunk); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			_, err := Load(fifo, tc.opt)
			require.ErrorContains(t, err, tc.want)
			require.ErrorIs(t, <-done, syscall.EPIPE, "the pipe was read past its head")
		})
	}
}
