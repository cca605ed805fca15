package jsonerr

import (
	"encoding/json"
	"errors"
	"testing"
)

type sizes struct {
	Max  int  `json:"max_position_embeddings"`
	Tie  bool `json:"tie_word_embeddings"`
	Rope *struct {
		Factor float64 `json:"factor"`
		Type   string  `json:"rope_type"`
	} `json:"rope_scaling"`
	Layers []string `json:"layer_types"`
	Heads  uint32
}

// file is a config.json's reading as model.ReadHFConfig has it: its
// fields in an embedded struct, whose Go name encoding/json's error
// puts in the field's path.
type file struct {
	sizes
	Text json.RawMessage `json:"text_config"`
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[]`, "an object expected, got an array"},
		{`"x"`, "an object expected, got a string"},
		{`{"max_position_embeddings": "4096"}`, "max_position_embeddings: an integer expected, got a string"},
		{`{"max_position_embeddings": 1.5}`, "max_position_embeddings: an integer expected, got the number 1.5"},
		{`{"max_position_embeddings": 1e40}`, "max_position_embeddings: an integer expected, got the number 1e40"},
		{`{"tie_word_embeddings": 1}`, "tie_word_embeddings: true or false expected, got a number"},
		{`{"rope_scaling": []}`, "rope_scaling: an object expected, got an array"},
		{`{"rope_scaling": {"factor": "4"}}`, "rope_scaling.factor: a number expected, got a string"},
		{`{"rope_scaling": {"rope_type": false}}`, "rope_scaling.rope_type: a string expected, got true or false"},
		{`{"layer_types": {}}`, "layer_types: an array expected, got an object"},
		{`{"layer_types": ["full", 2]}`, "layer_types: a string expected, got a number"},
		{`{"Heads": -1}`, "Heads: a non-negative integer expected, got the number -1"},
		// A syntax error at the character it names (encoding/json's
		// offset is past it), or past the end where the input ends.
		{"{\n  \"a\": 1,\n  \"b\": }", "line 3, column 8: invalid character '}' looking for beginning of value"},
		{"x", "line 1, column 1: invalid character 'x' looking for beginning of value"},
		{"{\"a\" 1}", "line 1, column 6: invalid character '1' after object key"},
		{"{}\n}", "line 2, column 1: invalid character '}' after top-level value"},
		{"{\"a\": 1", "line 1, column 8: unexpected end of JSON input"},
	} {
		var f file
		err := json.Unmarshal([]byte(tc.in), &f)
		if err == nil {
			t.Fatalf("%s: decoded", tc.in)
		}
		if got := Describe([]byte(tc.in), &f, err); got == nil || got.Error() != tc.want {
			t.Errorf("Describe(%s) = %v, want %q", tc.in, got, tc.want)
		}
	}
	other := errors.New("not JSON's")
	if got := Describe(nil, &file{}, other); got != other {
		t.Errorf("Describe(other error) = %v, want it as it is", got)
	}
}
