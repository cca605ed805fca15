package smallfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		limit      int64
		feed       string // written to fifo by another goroutine
		want       string // the content, where wantErr is ""
		wantErr    string
	}{
		{name: "regular within", path: small, limit: 7, want: `{"a":1}`},
		{name: "regular over", path: small, limit: 6, wantErr: "read " + small + ": 7 bytes, over the 6 bytes this file may hold"},
		{name: "device", path: "/dev/zero", limit: 1 << 20, wantErr: "read /dev/zero: a character device that gave over the 1 MiB this file may hold; want a regular file"},
		{name: "fifo within", path: fifo, limit: 8, feed: "12345678", want: "12345678"},
		{name: "fifo over", path: fifo, limit: 8, feed: "123456789", wantErr: "read " + fifo + ": a named pipe (FIFO) that gave over the 8 bytes this file may hold; want a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			if tc.feed != "" {
				go func() {
					f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
					if err == nil {
						_, err = f.WriteString(tc.feed)
						err = errors.Join(err, f.Close())
					}
					done <- err
				}()
			} else {
				done <- nil
			}
			b, err := Read(tc.path, tc.limit)
			if ferr := <-done; ferr != nil {
				t.Fatal(ferr)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Read(%s, %d) = %d bytes, %v; want error %q", tc.path, tc.limit, len(b), err, tc.wantErr)
				}
				return
			}
			if err != nil || string(b) != tc.want {
				t.Fatalf("Read(%s, %d) = %q, %v; want %q", tc.path, tc.limit, b, err, tc.want)
			}
		})
	}
	if _, err := Read(filepath.Join(dir, "missing"), Limit); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Read(missing) error = %v, want fs.ErrNotExist naming the file", err)
	}
}

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	fifo, file := filepath.Join(dir, "fifo"), filepath.Join(dir, "file")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "read " + fifo + ": a named pipe (FIFO), not a regular file"},
		{"/dev/zero", "read /dev/zero: a character device, not a regular file"},
		{dir, "read " + dir + ": a directory, not a regular file"},
	} {
		if b, err := ReadRegular(tc.path, Limit); err == nil || err.Error() != tc.want {
			t.Errorf("ReadRegular(%s) = %d bytes, %v; want error %q", tc.path, len(b), err, tc.want)
		}
	}
	if b, err := ReadRegular(file, Limit); err != nil || string(b) != "x" {
		t.Errorf("ReadRegular(file) = %q, %v; want \"x\"", b, err)
	}
}
