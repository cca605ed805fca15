// Package tfevents writes and reads TensorBoard event files of scalars:
// TFRecord files (each record a little-endian uint64 length, the masked
// CRC-32C of those 8 bytes, the data, the masked CRC-32C of the data) of
// tensorflow.Event protocol buffers. The first event of a file names its
// format (file_version "brain.Event:2"); each other event holds one step's
// scalars as Summary values (tag, simple_value). This is the subset that
// TensorBoard's scalar dashboard reads, encoded by hand with protowire so
// that no TensorFlow or TensorBoard code is needed.
package tfevents

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// FileVersion is the file_version of a file's first event: the format of
// the events after it.
const FileVersion = "brain.Event:2"

// Scalar is one value of a step, under its tag ("search/reward").
type Scalar struct {
	Tag   string
	Value float32
}

// Event is one step's scalars, logged at Wall (seconds since the Unix
// epoch).
type Event struct {
	Wall    float64
	Step    int64
	Scalars []Scalar
}

// WallTime is t as an event's wall time: seconds since the Unix epoch.
func WallTime(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// Field numbers of tensorflow.Event, tensorflow.Summary and
// tensorflow.Summary.Value (tensorflow/core/util/event.proto,
// tensorflow/core/framework/summary.proto).
const (
	eventWallTime    protowire.Number = 1 // double
	eventStep        protowire.Number = 2 // int64
	eventFileVersion protowire.Number = 3 // string
	eventSummary     protowire.Number = 5 // Summary
	summaryValue     protowire.Number = 1 // repeated Summary.Value
	valueTag         protowire.Number = 1 // string
	valueSimpleValue protowire.Number = 2 // float
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's checksum of b: its CRC-32C rotated right by 15
// bits plus a constant (so that a CRC of data holding CRCs stays well
// mixed).
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// appendRecord appends data to dst framed as one TFRecord.
func appendRecord(dst, data []byte) []byte {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(data)))
	dst = append(dst, n[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, maskedCRC(n[:]))
	dst = append(dst, data...)
	return binary.LittleEndian.AppendUint32(dst, maskedCRC(data))
}

// marshalEvent encodes e as a tensorflow.Event; version, when not empty,
// is its file_version (and e has no scalars: a file's first event).
func marshalEvent(e Event, version string) []byte {
	var b []byte
	b = protowire.AppendTag(b, eventWallTime, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(e.Wall))
	if e.Step != 0 {
		b = protowire.AppendTag(b, eventStep, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(e.Step))
	}
	if version != "" {
		b = protowire.AppendTag(b, eventFileVersion, protowire.BytesType)
		b = protowire.AppendString(b, version)
		return b
	}
	var summary []byte
	for _, s := range e.Scalars {
		var v []byte
		v = protowire.AppendTag(v, valueTag, protowire.BytesType)
		v = protowire.AppendString(v, s.Tag)
		v = protowire.AppendTag(v, valueSimpleValue, protowire.Fixed32Type)
		v = protowire.AppendFixed32(v, math.Float32bits(s.Value))
		summary = protowire.AppendTag(summary, summaryValue, protowire.BytesType)
		summary = protowire.AppendBytes(summary, v)
	}
	b = protowire.AppendTag(b, eventSummary, protowire.BytesType)
	return protowire.AppendBytes(b, summary)
}

// Encode returns a whole event file: the file_version event at wall, then
// events in order.
func Encode(wall float64, events []Event) []byte {
	b := appendRecord(nil, marshalEvent(Event{Wall: wall}, FileVersion))
	for _, e := range events {
		b = appendRecord(b, marshalEvent(e, ""))
	}
	return b
}

// Decode reads the event file b: its file_version, and its events of
// scalars in order (events without a summary, such as the file_version
// event, are left out). A last record cut short (a writer killed, or
// still writing) ends the events, torn saying so; a checksum that does
// not match, or an event that is not a valid protocol buffer, is an error
// naming the record's offset, returned with the events before that
// record. Those are what TensorBoard's Python loader (EventFileLoader,
// tensorboard --load_fast=false) shows of the file, stopping at the
// damage. Its default loader (rustboard, the data server) reads more: it
// checks a record's data checksum only when the record does not parse,
// so it shows a damaged record that still parses, damaged values and all,
// and the records after it; it stops at a length checksum that does not
// match, or a record that neither parses nor matches its checksum.
func Decode(b []byte) (version string, events []Event, torn bool, err error) {
	torn, err = eachRecord(b, func(off int, data []byte) error {
		e, v, hasSummary, err := unmarshalEvent(data)
		if err != nil {
			return fmt.Errorf("record at byte %d: %w", off, err)
		}
		if v != "" {
			version = v
		}
		if hasSummary {
			events = append(events, e)
		}
		return nil
	})
	return version, events, torn, err
}

// eachRecord calls f with each TFRecord of b, its offset and its data,
// the checksums checked. A last record cut short is left out, torn saying
// so.
func eachRecord(b []byte, f func(off int, data []byte) error) (torn bool, err error) {
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < 12 {
			return true, nil
		}
		if got, want := binary.LittleEndian.Uint32(rest[8:]), maskedCRC(rest[:8]); got != want {
			return false, fmt.Errorf("record at byte %d: length checksum %#08x, want %#08x", off, got, want)
		}
		n := binary.LittleEndian.Uint64(rest[:8])
		if len(rest) < 16 || n > uint64(len(rest)-16) {
			return true, nil
		}
		data := rest[12 : 12+n]
		if got, want := binary.LittleEndian.Uint32(rest[12+n:]), maskedCRC(data); got != want {
			return false, fmt.Errorf("record at byte %d: data checksum %#08x, want %#08x", off, got, want)
		}
		if err := f(off, data); err != nil {
			return false, err
		}
		off += 16 + int(n)
	}
	return false, nil
}

// unmarshalEvent decodes a tensorflow.Event's wall time, step,
// file_version and scalar values, skipping its other fields.
func unmarshalEvent(b []byte) (e Event, version string, hasSummary bool, err error) {
	err = eachField(b, func(num protowire.Number, typ protowire.Type, field []byte) error {
		switch {
		case num == eventWallTime && typ == protowire.Fixed64Type:
			v, _ := protowire.ConsumeFixed64(field)
			e.Wall = math.Float64frombits(v)
		case num == eventStep && typ == protowire.VarintType:
			v, _ := protowire.ConsumeVarint(field)
			e.Step = int64(v)
		case num == eventFileVersion && typ == protowire.BytesType:
			v, _ := protowire.ConsumeBytes(field)
			version = string(v)
		case num == eventSummary && typ == protowire.BytesType:
			hasSummary = true
			summary, _ := protowire.ConsumeBytes(field)
			return eachField(summary, func(num protowire.Number, typ protowire.Type, field []byte) error {
				if num != summaryValue || typ != protowire.BytesType {
					return nil
				}
				value, _ := protowire.ConsumeBytes(field)
				s, err := unmarshalValue(value)
				e.Scalars = append(e.Scalars, s)
				return err
			})
		}
		return nil
	})
	return e, version, hasSummary, err
}

// unmarshalValue decodes a Summary.Value's tag and simple_value.
func unmarshalValue(b []byte) (Scalar, error) {
	var s Scalar
	err := eachField(b, func(num protowire.Number, typ protowire.Type, field []byte) error {
		switch {
		case num == valueTag && typ == protowire.BytesType:
			v, _ := protowire.ConsumeBytes(field)
			s.Tag = string(v)
		case num == valueSimpleValue && typ == protowire.Fixed32Type:
			v, _ := protowire.ConsumeFixed32(field)
			s.Value = math.Float32frombits(v)
		}
		return nil
	})
	return s, err
}

// eachField calls f with each field of the message b: its number, wire
// type and encoded value (checked to be whole).
func eachField(b []byte, f func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("event: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Errorf("event field %d: %w", num, protowire.ParseError(m))
		}
		if err := f(num, typ, b[n:n+m]); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}
