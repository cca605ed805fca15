package model

import (
	"encoding/json"
	"testing"
)

// TestRotary reads the rotary scaling, rope_theta and rotary width of
// config.json as transformers 5.25 resolves them: rope_scaling before
// rope_parameters (a transformers 5 config given yarn by hand), type as
// rope_type's older name, Qwen2-VL's mrope as no scaling, rope_theta
// and partial_rotary_factor in rope_parameters or at the top.
func TestRotary(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		kind       string
		theta      float64
		width      int
	}{
		{"none", `{"head_dim": 128}`, "", 10000, 128},
		{"transformers 4 default", `{"hidden_size": 2560, "num_attention_heads": 32, "rope_theta": 1000000, "rope_scaling": null}`, "", 1e6, 80},
		{"transformers 5 default", `{"head_dim": 24, "rope_parameters": {"rope_theta": 5e5, "rope_type": "default"}}`, "", 5e5, 24},
		{"yarn over transformers 5", `{"head_dim": 24, "rope_scaling": {"rope_type": "yarn", "factor": 4}, "rope_parameters": {"rope_theta": 5e5, "rope_type": "default"}}`, "yarn", 5e5, 24},
		{"older key", `{"head_dim": 64, "rope_theta": 1e4, "rope_scaling": {"type": "linear", "factor": 2}}`, "linear", 1e4, 64},
		{"mrope", `{"head_dim": 128, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}`, "", 10000, 128},
		{"partial, top level", `{"head_dim": 64, "partial_rotary_factor": 0.5, "rope_scaling": {"rope_type": "dynamic"}}`, "dynamic", 10000, 32},
		{"partial, transformers 5", `{"head_dim": 64, "rope_parameters": {"rope_type": "llama3", "partial_rotary_factor": 0.25}}`, "llama3", 10000, 16},
		{"per layer type", `{"head_dim": 64, "rope_parameters": {"full_attention": {"rope_type": "linear"}}}`, "", 10000, 64},
	} {
		var c HFConfig
		if err := json.Unmarshal([]byte(tc.json), &c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		kind, theta, width := c.rotary()
		if kind != tc.kind || theta != tc.theta || width != tc.width {
			t.Errorf("%s: rotary() = %q, %g, %d; want %q, %g, %d", tc.name, kind, theta, width, tc.kind, tc.theta, tc.width)
		}
	}
}
