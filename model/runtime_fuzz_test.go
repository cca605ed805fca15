package model

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseDevice feeds arbitrary --device values to ParseDevice: a device
// it accepts has no negative id and parses back from its String as
// itself; an error quotes the value and says what is accepted.
func FuzzParseDevice(f *testing.F) {
	for _, s := range []string{"cpu", "CPU", "cuda", "cuda:0", " cuda:3 ", "cuda:+1", "cuda:-1", "cuda:", "auto", "", "gpu",
		"cuda:99999999999999999999", "cuda:1:2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, auto, err := ParseDevice(s)
		if err != nil {
			// The caller prefixes the flag or setting (--device); the
			// error itself quotes the value as given and says what is
			// accepted.
			if msg := err.Error(); !strings.Contains(msg, strconv.Quote(s)) || !strings.Contains(msg, ": want ") {
				t.Fatalf("error %q does not quote %q or say what is accepted", err, s)
			}
			return
		}
		if d.ID < 0 || d.Kind != CPU && d.Kind != CUDA {
			t.Fatalf("%q: device %+v", s, d)
		}
		back, backAuto, err := ParseDevice(d.String())
		if err != nil || back != d || backAuto {
			t.Fatalf("%q parsed as %v (auto %t), which parses back as %v, %t, %v", s, d, auto, back, backAuto, err)
		}
	})
}

// FuzzArenaConfig feeds arbitrary --cuda-option gpu_mem_limit and
// arena_extend_strategy values to ArenaConfig: a limit it accepts is a
// positive number of bytes, and an error names the option.
func FuzzArenaConfig(f *testing.F) {
	f.Add("8589934592", "kSameAsRequested", true)
	f.Add("0", "kNextPowerOfTwo", true)
	f.Add("8GB", "", false)
	f.Add("-1", "same", true)
	f.Fuzz(func(t *testing.T, limit, strategy string, withStrategy bool) {
		opts := map[string]string{"gpu_mem_limit": limit}
		if withStrategy {
			opts["arena_extend_strategy"] = strategy
		}
		cfg, err := ArenaConfig(opts)
		if err != nil {
			if !strings.Contains(err.Error(), "gpu_mem_limit=") && !strings.Contains(err.Error(), "arena_extend_strategy=") {
				t.Fatalf("error %q names no option", err)
			}
			return
		}
		if cfg.MaxBytes <= 0 {
			t.Fatalf("gpu_mem_limit=%s: %d bytes", limit, cfg.MaxBytes)
		}
		if cfg.SameAsRequested != (withStrategy && strategy == "kSameAsRequested") {
			t.Fatalf("arena_extend_strategy=%s: SameAsRequested %t", strategy, cfg.SameAsRequested)
		}
	})
}
