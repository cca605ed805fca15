package main

import (
	"fmt"
	"os"

	"github.com/spiral-rl/spiral/model/atomicfile"
)

// copyFile copies src to dst (atomically).
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(dst, b, 0o666); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}
