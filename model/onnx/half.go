package onnx

import "math"

// Float16ToFloat32 converts IEEE 754 binary16 bits to float32 exactly
// (every half value, subnormals, ±Inf and NaN payloads included, is
// representable in float32).
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: mant * 2^-24
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// Float32ToFloat16 converts f to IEEE 754 binary16 bits, rounding to
// nearest with ties to even. Values past the half range (|f| >= 65520)
// become ±Inf, values under half the smallest subnormal (2^-25) become ±0,
// and NaN stays a quiet NaN.
func Float32ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		m := mant | 0x800000 // implicit leading one: 24 significant bits
		shift := uint32(14 - e)
		r := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++ // may carry into the smallest normal, 0x400, which is right
		}
		return sign | uint16(r)
	}
	h := uint16(e)<<10 | uint16(mant>>13)
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is right, up to +Inf
	}
	return sign | h
}

// BFloat16ToFloat32 converts bfloat16 bits (the high half of a float32) to
// float32 exactly.
func BFloat16ToFloat32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// Float32ToBFloat16 converts f to bfloat16 bits, rounding to nearest with
// ties to even; NaN stays a quiet NaN.
func Float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
