package onnx

import (
	"math"
	"testing"
)

// Expected bit patterns from IEEE 754-2008 binary16 and from numpy:
// np.float16(x).view(np.uint16), and bfloat16 as the high half of float32
// rounded to nearest even (torch.tensor(x, dtype=torch.bfloat16)).
func TestFloat16Conversions(t *testing.T) {
	tests := []struct {
		name string
		f    float32
		h    uint16
	}{
		{"zero", 0, 0x0000},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"one", 1, 0x3c00},
		{"minus two", -2, 0xc000},
		{"max half", 65504, 0x7bff},
		{"smallest normal", 6.103515625e-05, 0x0400},
		{"smallest subnormal", 5.960464477539063e-08, 0x0001},
		{"largest subnormal", 6.097555160522461e-05, 0x03ff},
		{"one third", 0.333251953125, 0x3555},
		{"inf", float32(math.Inf(1)), 0x7c00},
		{"minus inf", float32(math.Inf(-1)), 0xfc00},
	}
	for _, tc := range tests {
		if got := Float32ToFloat16(tc.f); got != tc.h {
			t.Errorf("%s: Float32ToFloat16(%g) = %#04x, want %#04x", tc.name, tc.f, got, tc.h)
		}
		if got := Float16ToFloat32(tc.h); got != tc.f || math.Signbit(float64(got)) != math.Signbit(float64(tc.f)) {
			t.Errorf("%s: Float16ToFloat32(%#04x) = %g, want %g", tc.name, tc.h, got, tc.f)
		}
	}
	rounding := []struct {
		name string
		f    float32
		h    uint16
	}{
		{"ties to even down", 1 + 1.0/2048, 0x3c00},           // halfway between 1 and 1+2^-10
		{"ties to even up", 1 + 3.0/2048, 0x3c02},             // halfway between 1+2^-10 and 1+2^-9
		{"above half rounds up", 1 + 1.0/2048 + 1e-7, 0x3c01}, // just past halfway
		{"overflow to inf", 65520, 0x7c00},
		{"just under overflow", 65519, 0x7bff},
		{"half smallest subnormal to zero", 2.9802322387695312e-08, 0x0000},
		{"past half smallest subnormal", 2.99e-08, 0x0001},
		{"subnormal rounds down", 6.1e-05, 0x03ff},
		{"subnormal carries to normal", 6.102e-05, 0x0400},
	}
	for _, tc := range rounding {
		if got := Float32ToFloat16(tc.f); got != tc.h {
			t.Errorf("%s: Float32ToFloat16(%g) = %#04x, want %#04x", tc.name, tc.f, got, tc.h)
		}
	}
	if got := Float16ToFloat32(Float32ToFloat16(float32(math.NaN()))); !math.IsNaN(float64(got)) {
		t.Errorf("NaN round trip = %g", got)
	}
	// Every half value survives half -> float32 -> half.
	for h := range 1 << 16 {
		f := Float16ToFloat32(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := Float32ToFloat16(f); back != uint16(h) {
			t.Fatalf("half %#04x -> %g -> %#04x", h, f, back)
		}
	}
}

func TestBFloat16Conversions(t *testing.T) {
	tests := []struct {
		name string
		f    float32
		h    uint16
	}{
		{"one", 1, 0x3f80},
		{"minus two", -2, 0xc000},
		{"pi rounds", float32(math.Pi), 0x4049},
		{"ties to even down", math.Float32frombits(0x3f808000), 0x3f80},
		{"ties to even up", math.Float32frombits(0x3f818000), 0x3f82},
		{"inf", float32(math.Inf(1)), 0x7f80},
		{"max float32 overflows", math.MaxFloat32, 0x7f80},
	}
	for _, tc := range tests {
		if got := Float32ToBFloat16(tc.f); got != tc.h {
			t.Errorf("%s: Float32ToBFloat16(%g) = %#04x, want %#04x", tc.name, tc.f, got, tc.h)
		}
	}
	if got := BFloat16ToFloat32(0x3f80); got != 1 {
		t.Errorf("BFloat16ToFloat32(0x3f80) = %g, want 1", got)
	}
	if got := BFloat16ToFloat32(Float32ToBFloat16(float32(math.NaN()))); !math.IsNaN(float64(got)) {
		t.Errorf("NaN round trip = %g", got)
	}
}
