package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// writeJSONLine appends v to w as one JSON line.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// copyFile copies src to dst.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
