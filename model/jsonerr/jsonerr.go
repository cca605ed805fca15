// Package jsonerr says what is wrong with a JSON file that does not
// decode, in the file's terms: a value of the wrong type by its JSON
// path and the JSON types ("max_position_embeddings: an integer
// expected, got a string") rather than encoding/json's Go types ("Go
// struct field .HFConfig.max_position_embeddings of type int"), and a
// syntax error by line and column rather than byte offset.
package jsonerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Describe returns err, json.Unmarshal's error decoding data into v,
// as a user reads it: a *json.UnmarshalTypeError as the JSON path of
// the value (none for the whole document), the JSON value expected and
// the one found; a *json.SyntaxError with its line and column, those of
// the character it names (encoding/json's offset is past it), or where
// the input ends; any other error as it is. The caller names the file.
func Describe(data []byte, v any, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off := syn.Offset
		if off > 0 && strings.HasPrefix(syn.Error(), "invalid character ") {
			off-- // the character's own
		}
		if off >= 0 && off <= int64(len(data)) {
			line := 1 + bytes.Count(data[:off], []byte("\n"))
			col := int(off) - bytes.LastIndexByte(data[:off], '\n')
			return fmt.Errorf("line %d, column %d: %w", line, col, err)
		}
	case errors.As(err, &typ):
		what := fmt.Sprintf("%s expected, got %s", Type(typ.Type), jsonValue(typ.Value))
		if path := jsonPath(reflect.TypeOf(v), typ.Field); path != "" {
			what = path + ": " + what
		}
		return errors.New(what)
	}
	return err
}

// jsonPath is field, encoding/json's dotted path of Go field names and
// JSON keys to a value in a t, as JSON keys alone: the names of embedded
// structs, whose fields JSON holds at the level above, are left out.
func jsonPath(t reflect.Type, field string) string {
	if field == "" {
		return ""
	}
	var keys []string
	for name := range strings.SplitSeq(field, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			keys, t = append(keys, name), nil
			continue
		}
		f, ok := t.FieldByName(name)
		if !ok { // a JSON key: the field whose tag names it
			f, ok = taggedField(t, name)
		}
		switch {
		case !ok:
			keys, t = append(keys, name), nil
		case f.Anonymous && f.Tag.Get("json") == "":
			t = f.Type // an embedded struct's name: not in the JSON
		default:
			keys, t = append(keys, name), f.Type
		}
	}
	return strings.Join(keys, ".")
}

// taggedField is the field of struct type t, or of a struct embedded in
// it, whose json tag names key.
func taggedField(t reflect.Type, key string) (reflect.StructField, bool) {
	return t.FieldByNameFunc(func(name string) bool {
		f, ok := t.FieldByName(name)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		return ok && tag == key
	})
}

// Type names the JSON value a Go type decodes from: "an integer" (one of
// fewer than 64 bits with the range it must be within: "an integer
// within int32"), "an object"...
func Type(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return Type(t.Elem())
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return fmt.Sprintf("an integer within %s", t.Kind())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	}
	return "another value"
}

// jsonValue names the JSON value encoding/json describes as value
// ("string", "number 1.5", "array").
func jsonValue(value string) string {
	switch value {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "true or false"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	if n, ok := strings.CutPrefix(value, "number "); ok {
		return "the number " + n
	}
	return value
}
