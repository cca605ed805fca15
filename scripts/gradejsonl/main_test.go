package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunErrorsNameTheRequest checks that every bad request is reported
// with its line and id, so that it can be found in the input.
func TestRunErrorsNameTheRequest(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"bad json", "{\"id\": \"a\"}\n{", "gradejsonl: line 2: "},
		{"unknown mode", `{"id": "a", "mode": "guess"}`, `gradejsonl: line 1: a: unknown mode "guess"`},
		{"unknown target", `{"id": "a", "config": {"targets": ["text"]}}`, `gradejsonl: line 1: a: unknown target "text"`},
		{"invalid config", `{"id": "a", "config": {"float_rounding": 16}}`, "gradejsonl: line 1: a: grader: FloatRounding 16: allowed are 0 (default 6) to 15"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(strings.NewReader(tc.in), &bytes.Buffer{})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error starting %q", tc.in, err, tc.want)
			}
		})
	}
}
