package data

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeFile writes content to name in a fresh temporary directory and
// returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// want is the expected outcome of one load: problem/answer pairs in order,
// and the skipped rows' reasons (substrings) in order.
type want struct {
	problems [][2]string
	skipped  []string
	mapping  [2]string // problem field, answer field
	ids      []string  // when non-nil, the expected IDs
}

func TestLoadTable(t *testing.T) {
	const instr = `Please reason step by step, and put your final answer within \boxed{}.`
	cases := []struct {
		name    string
		file    string // file name: its extension selects the format
		content string
		opt     LoadOptions
		want    want
	}{
		{
			name:    "jsonl problem/answer",
			file:    "a.jsonl",
			content: `{"problem": "1+1?", "answer": "2"}` + "\n" + `{"problem": "2+2?", "answer": "4"}` + "\n",
			want:    want{problems: [][2]string{{"1+1?", "2"}, {"2+2?", "4"}}, mapping: [2]string{"problem", "answer"}},
		},
		{
			name:    "jsonl question/final_answer, blank lines, CRLF, BOM, no final newline",
			file:    "a.jsonl",
			content: "\xEF\xBB\xBF" + `{"question": "Q1", "final_answer": "A1"}` + "\r\n\r\n  \n" + `{"question": "Q2", "final_answer": "A2"}`,
			want:    want{problems: [][2]string{{"Q1", "A1"}, {"Q2", "A2"}}, mapping: [2]string{"question", "final_answer"}},
		},
		{
			// Files that each start with a byte order mark, joined (cat
			// a.jsonl b.jsonl): line 3 was "malformed JSON: invalid
			// character 'ï' looking for beginning of value".
			name:    "jsonl joined from files with a BOM each",
			file:    "a.jsonl",
			content: "\xEF\xBB\xBF" + `{"problem": "1+1?", "answer": "2"}` + "\n\n" + "\xEF\xBB\xBF" + `{"problem": "2+2?", "answer": "4"}` + "\r\n",
			want:    want{problems: [][2]string{{"1+1?", "2"}, {"2+2?", "4"}}, mapping: [2]string{"problem", "answer"}},
		},
		{
			name:    "case-insensitive names, exact name preferred",
			file:    "a.jsonl",
			content: `{"Question": "upper", "question": "lower", "Answer": "7"}` + "\n",
			want:    want{problems: [][2]string{{"lower", "7"}}, mapping: [2]string{"question", "Answer"}},
		},
		{
			name:    "prompt/expected_answer with numbers of every kind",
			file:    "a.jsonl",
			content: `{"prompt": "p1", "expected_answer": 27.0}` + "\n" + `{"prompt": "p2", "expected_answer": 32.5}` + "\n" + `{"prompt": "p3", "expected_answer": -4}` + "\n" + `{"prompt": "p4", "expected_answer": 1e3}` + "\n",
			want:    want{problems: [][2]string{{"p1", "27"}, {"p2", "32.5"}, {"p3", "-4"}, {"p4", "1000"}}, mapping: [2]string{"prompt", "expected_answer"}},
		},
		{
			// Integral or not is decided on the number's digits, not on
			// its float64, which rounds 0.99999999999999999 to 1 and
			// 1e-400 to 0.
			name:    "numbers read exactly",
			file:    "a.jsonl",
			content: `{"prompt": "n0", "answer": 1e-400}` + "\n" + `{"prompt": "n1", "answer": 0.99999999999999999}` + "\n" + `{"prompt": "n2", "answer": 4503599627370496.5}` + "\n" + `{"prompt": "n3", "answer": 100e-2}` + "\n" + `{"prompt": "n4", "answer": 1.50E+1}` + "\n" + `{"prompt": "n5", "answer": -0.0}` + "\n" + `{"prompt": "n6", "answer": 1e400}` + "\n" + `{"prompt": "n7", "answer": 123e-1}` + "\n" + `{"prompt": "n8", "answer": -12.000}` + "\n" + `{"prompt": "n9", "answer": 0.50}` + "\n",
			want:    want{problems: [][2]string{{"n0", "1e-400"}, {"n1", "0.99999999999999999"}, {"n2", "4503599627370496.5"}, {"n3", "1"}, {"n4", "15"}, {"n5", "-0"}, {"n6", "1e400"}, {"n7", "123e-1"}, {"n8", "-12"}, {"n9", "0.50"}}, mapping: [2]string{"prompt", "answer"}},
		},
		{
			name:    "verl row: chat prompt, nested ground truth, instruction cut",
			file:    "a.jsonl",
			content: `{"data_source": "x", "prompt": [{"role": "system", "content": "be nice"}, {"role": "user", "content": "What is 3*3? Let's think step by step and output the final answer within \\boxed{}."}], "reward_model": {"ground_truth": "9", "style": "rule"}}` + "\n",
			want:    want{problems: [][2]string{{"What is 3*3?", "9"}}, mapping: [2]string{"prompt", "reward_model.ground_truth"}},
		},
		{
			name:    "instruction suffix cut",
			file:    "a.jsonl",
			content: `{"prompt": "Find x.\n` + strings.ReplaceAll(instr, `\`, `\\`) + `", "answer": "1"}` + "\n",
			want:    want{problems: [][2]string{{"Find x.", "1"}}, mapping: [2]string{"prompt", "answer"}},
		},
		{
			name:    "instruction suffix kept on request",
			file:    "a.jsonl",
			content: `{"prompt": "Find x. ` + strings.ReplaceAll(instr, `\`, `\\`) + `", "answer": "1"}` + "\n",
			opt:     LoadOptions{KeepInstructions: true},
			want:    want{problems: [][2]string{{"Find x. " + instr, "1"}}, mapping: [2]string{"prompt", "answer"}},
		},
		{
			name:    "solution only: last boxed, nested braces",
			file:    "a.jsonl",
			content: `{"problem": "p", "solution": "First \\boxed{1}, then \\boxed{\\frac{1}{2}}."}` + "\n",
			want:    want{problems: [][2]string{{"p", `\frac{1}{2}`}}, mapping: [2]string{"problem", "solution"}},
		},
		{
			name:    "answer preferred over solution",
			file:    "a.jsonl",
			content: `{"problem": "p", "solution": "so \\boxed{3}", "answer": "three"}` + "\n",
			want:    want{problems: [][2]string{{"p", "three"}}, mapping: [2]string{"problem", "answer"}},
		},
		{
			name:    "gsm8k rationale with ####",
			file:    "a.jsonl",
			content: `{"question": "q", "answer": "16 - 3 = <<16-3=13>>13\n#### 13"}` + "\n",
			want:    want{problems: [][2]string{{"q", "13"}}, mapping: [2]string{"question", "answer"}},
		},
		{
			name:    "explicit fields, dotted path, ids",
			file:    "a.jsonl",
			content: `{"text": "t1", "meta": {"gold": "g1"}, "key": 5, "problem": "ignored", "answer": "ignored"}` + "\n",
			opt:     LoadOptions{ProblemField: "text", AnswerField: "meta.gold", IDField: "key"},
			want:    want{problems: [][2]string{{"t1", "g1"}}, mapping: [2]string{"text", "meta.gold"}, ids: []string{"5"}},
		},
		{
			name:    "skips: empty problem, empty answer, duplicate, solution without box",
			file:    "a.jsonl",
			content: `{"problem": "  ", "solution": "\\boxed{1}"}` + "\n" + `{"problem": "a  b", "solution": "\\boxed{}"}` + "\n" + `{"problem": "keep", "solution": "\\boxed{2}"}` + "\n" + `{"problem": " keep\n", "solution": "\\boxed{3}"}` + "\n" + `{"problem": "nobox", "solution": "it is 4"}` + "\n",
			want: want{
				problems: [][2]string{{"keep", "2"}},
				skipped:  []string{"a.jsonl:1: empty problem", "a.jsonl:2: empty answer", "a.jsonl:4: duplicate problem (first at ", `a.jsonl:5: field "solution": no final answer`},
				mapping:  [2]string{"problem", "solution"},
			},
		},
		{
			// Real datasets have null cells: a null problem or answer is
			// skipped as an empty one is; it refused the whole file
			// ("wrong type: null").
			name:    "skips: null problem, null answer",
			file:    "a.jsonl",
			content: `{"problem": "keep", "answer": "1"}` + "\n" + `{"problem": "p2", "answer": null}` + "\n" + `{"problem": null, "answer": "3"}` + "\n" + `{"problem": null, "answer": null}` + "\n" + `{"problem": " ", "answer": null}` + "\n",
			want: want{
				problems: [][2]string{{"keep", "1"}},
				skipped:  []string{"a.jsonl:2: null answer", "a.jsonl:3: null problem", "a.jsonl:4: null problem", "a.jsonl:5: empty problem"},
				mapping:  [2]string{"problem", "answer"},
			},
		},
		{
			name:    "skips: null worked solution, null nested answer, in a JSON document",
			file:    "a.json",
			content: "[\n {\"prompt\": \"keep\", \"reward_model\": {\"ground_truth\": \"1\"}},\n {\"prompt\": \"q\", \"reward_model\": {\"ground_truth\": null}}\n]\n",
			want: want{
				problems: [][2]string{{"keep", "1"}},
				skipped:  []string{"a.json:row 1 (line 3): null answer"},
				mapping:  [2]string{"prompt", "reward_model.ground_truth"},
			},
		},
		{
			name:    "skips: null worked solution",
			file:    "a.jsonl",
			content: `{"problem": "keep", "solution": "\\boxed{2}"}` + "\n" + `{"problem": "q", "solution": null}` + "\n",
			want: want{
				problems: [][2]string{{"keep", "2"}},
				skipped:  []string{"a.jsonl:2: null answer"},
				mapping:  [2]string{"problem", "solution"},
			},
		},
		{
			// Each skipped row of a JSON document is named by its index
			// and the line it starts on, as its errors name it.
			name:    "skips in JSON documents name the line",
			file:    "a.json",
			content: "[\n {\"problem\": \"keep\", \"answer\": \"1\"},\n {\n  \"problem\": \"p\",\n  \"answer\": \"\"\n },\n {\"problem\": \"keep\", \"answer\": \"1\"}\n]\n",
			want: want{
				problems: [][2]string{{"keep", "1"}},
				skipped:  []string{"a.json:row 1 (line 3): empty answer", "a.json:row 2 (line 7): duplicate problem (first at "},
				mapping:  [2]string{"problem", "answer"},
			},
		},
		{
			name:    "skips in a JSON object holding an array name the line",
			file:    "a.json",
			content: "{\"data\": [\n{\"problem\": \"p\", \"answer\": \"1\"},\n{\"problem\": \"  \", \"answer\": \"2\"}\n]}",
			want: want{
				problems: [][2]string{{"p", "1"}},
				skipped:  []string{"a.json:data row 1 (line 3): empty problem"},
				mapping:  [2]string{"problem", "answer"},
			},
		},
		{
			name:    "positional and repeated ids",
			file:    "a.jsonl",
			content: `{"problem": "p1", "answer": "1", "id": "x"}` + "\n" + `{"problem": "p2", "answer": "2", "id": "x"}` + "\n" + `{"problem": "p3", "answer": "3"}` + "\n",
			want:    want{problems: [][2]string{{"p1", "1"}, {"p2", "2"}, {"p3", "3"}}, mapping: [2]string{"problem", "answer"}, ids: []string{"x", "x~2", "a.jsonl:2"}},
		},
		{
			name:    "json array",
			file:    "a.json",
			content: "[\n {\"problem\": \"p1\", \"answer\": 142.0},\n {\"problem\": \"p2\", \"answer\": \"x\"}\n]\n",
			want:    want{problems: [][2]string{{"p1", "142"}, {"p2", "x"}}, mapping: [2]string{"problem", "answer"}},
		},
		{
			name:    "json object of rows keyed by id, order kept",
			file:    "a.json",
			content: `{"z": {"question": "q1", "answer": "1"}, "a": {"question": "q2", "answer": "2"}}`,
			want:    want{problems: [][2]string{{"q1", "1"}, {"q2", "2"}}, mapping: [2]string{"question", "answer"}, ids: []string{"z", "a"}},
		},
		{
			name:    "json object holding one array of rows",
			file:    "a.json",
			content: `{"version": 2, "data": [{"problem": "p", "ground_truth": 3}]}`,
			want:    want{problems: [][2]string{{"p", "3"}}, mapping: [2]string{"problem", "ground_truth"}},
		},
		{
			// Python's csv.DictReader keeps a UTF-8 file's byte order
			// mark in its first column's name: "\ufeffid" is the id
			// field, "\ufeffproblem" the problem's.
			name:    "a CSV's byte order mark kept in the first column's name",
			file:    "a.jsonl",
			content: `{"\ufeffid": "a1", "question": "p", "answer": "1"}` + "\n" + `{"\ufeffid": "a2", "question": "q", "answer": "2"}` + "\n",
			want:    want{problems: [][2]string{{"p", "1"}, {"q", "2"}}, mapping: [2]string{"question", "answer"}, ids: []string{"a1", "a2"}},
		},
		{
			name:    "a byte order mark in the problem field's name",
			file:    "a.jsonl",
			content: `{"\ufeffproblem": "p", "answer": "1"}` + "\n",
			want:    want{problems: [][2]string{{"p", "1"}}, mapping: [2]string{"\ufeffproblem", "answer"}},
		},
		{
			name:    "format forced for an unknown extension",
			file:    "a.txt",
			content: `{"problem": "p", "answer": "1"}` + "\n",
			opt:     LoadOptions{Format: "jsonl"},
			want:    want{problems: [][2]string{{"p", "1"}}, mapping: [2]string{"problem", "answer"}},
		},
		{
			name:    "format sniffed: JSON array without extension",
			file:    "data",
			content: ` [{"problem": "p", "answer": "1"}]`,
			want:    want{problems: [][2]string{{"p", "1"}}, mapping: [2]string{"problem", "answer"}},
		},
		{
			name:    "format sniffed: pretty JSON object is JSON, not JSONL",
			file:    "data",
			content: "{\n \"k\": {\"problem\": \"p\", \"answer\": \"1\"}\n}",
			want:    want{problems: [][2]string{{"p", "1"}}, mapping: [2]string{"problem", "answer"}},
		},
		{
			// Its first line, cut at the 4 KiB sniffed, was no valid
			// JSON: read as one JSON document, "extra data" at line 2.
			name:    "format sniffed: JSONL whose first row is longer than 4 KiB",
			file:    "data",
			content: "\n" + `{"problem": "` + strings.Repeat("x", 5000) + `", "answer": "1"}` + "\n" + `{"problem": "q", "answer": "2"}` + "\n",
			want:    want{problems: [][2]string{{strings.Repeat("x", 5000), "1"}, {"q", "2"}}, mapping: [2]string{"problem", "answer"}},
		},
		{
			name:    "format sniffed: JSON object whose first line is longer than 4 KiB",
			file:    "data",
			content: `{"data": [{"problem": "` + strings.Repeat("x", 5000) + `", "answer": "1"},` + "\n" + `{"problem": "q", "answer": "2"}]}`,
			want:    want{problems: [][2]string{{strings.Repeat("x", 5000), "1"}, {"q", "2"}}, mapping: [2]string{"problem", "answer"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.file, tc.content)
			ds, err := Load(path, tc.opt)
			require.NoError(t, err)
			var got [][2]string
			for _, p := range ds.Problems {
				got = append(got, [2]string{p.Problem, p.Answer})
				require.NotEmpty(t, p.ID)
				require.True(t, strings.HasPrefix(p.Source, path+":"), "source %q", p.Source)
			}
			require.Equal(t, tc.want.problems, got)
			require.Equal(t, tc.want.mapping, [2]string{ds.Mapping.ProblemField, ds.Mapping.AnswerField})
			sk := ds.Skipped()
			require.Len(t, sk, len(tc.want.skipped), "skipped: %+v", sk)
			for i, s := range sk {
				require.Contains(t, filepath.Base(s.Source)+": "+s.Reason, tc.want.skipped[i])
			}
			require.Equal(t, len(got)+len(sk), ds.Records)
			if tc.want.ids != nil {
				var ids []string
				for _, p := range ds.Problems {
					ids = append(ids, p.ID)
				}
				require.Equal(t, tc.want.ids, ids)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		content string // "" with noFile means the file does not exist
		noFile  bool
		opt     LoadOptions
		want    []string // substrings of the error
	}{
		{name: "malformed line", file: "a.jsonl", content: `{"problem": "p", "answer": "1"}` + "\n" + `{"problem": "p2", "answer": ` + "\n", want: []string{"a.jsonl:2:", "malformed JSON"}},
		{name: "json array named .jsonl", file: "a.jsonl", content: "[\n {\"problem\": \"p\", \"answer\": \"1\"}\n]\n", want: []string{"a.jsonl:1:", "malformed JSON", "looks like one JSON document", "--format json"}},
		{name: "pretty-printed object named .jsonl", file: "a.jsonl", content: "{\n \"problem\": \"p\", \"answer\": \"1\"\n}\n", want: []string{"a.jsonl:1:", "--format json"}},
		{name: "json lines named .json", file: "a.json", content: `{"problem": "p", "answer": "1"}` + "\n" + `{"problem": "q", "answer": "2"}` + "\n", want: []string{"a.json:2:", "extra data", "looks like JSON Lines", "--format jsonl"}},
		{name: "json lines given --format json", file: "a.jsonl", content: `{"problem": "p", "answer": "1"}` + "\r\n" + `{"problem": "q", "answer": "2"}` + "\r\n", opt: LoadOptions{Format: FormatJSON}, want: []string{"a.jsonl:2:", "looks like JSON Lines", "--format jsonl"}},
		{name: "one row named .json", file: "a.json", content: `{"problem": "p", "answer": "1"}` + "\n", want: []string{"holds 0 arrays", "looks like JSON Lines", "--format jsonl"}},
		{name: "two values on a line", file: "a.jsonl", content: `{"problem": "p", "answer": "1"} {"problem": "q"}` + "\n", want: []string{"a.jsonl:1:", "extra data"}},
		{name: "row is not an object", file: "a.jsonl", content: `["p", "1"]` + "\n", want: []string{"a.jsonl:1:", "row is a list, want an object"}},
		// pandas' df.to_json("a.jsonl", orient="records") without
		// lines=True: the rows as one JSON array on one line.
		{name: "json array of rows on one line named .jsonl", file: "a.jsonl", content: `[{"problem": "p", "answer": "1"}, {"problem": "q", "answer": "2"}]`, want: []string{"a.jsonl:1: row is a list of 2 objects, want an object (the file looks like one JSON document, not an object per line: name it .json or pass --format json)"}},
		{name: "missing answer field in a later row", file: "a.jsonl", content: `{"problem": "p", "answer": "1"}` + "\n\n" + `{"problem": "q"}` + "\n", want: []string{"a.jsonl:3:", `field "answer": missing (the row's fields: [problem])`}},
		{name: "missing problem field", file: "a.jsonl", content: `{"problem": "p", "answer": "1"}` + "\n" + `{"answer": "2"}` + "\n", want: []string{"a.jsonl:2:", `field "problem": missing (the row's fields: [answer])`}},
		{name: "answer of wrong type: boolean", file: "a.jsonl", content: `{"problem": "p", "answer": true}` + "\n", want: []string{"a.jsonl:1:", `field "answer": wrong type: a boolean`}},
		{name: "answer of wrong type: object", file: "a.jsonl", content: `{"problem": "p", "answer": {"v": 1}}` + "\n", want: []string{"a.jsonl:1:", `field "answer": wrong type: an object`}},
		// A null answer is skipped (TestLoadTable); a file of only such rows has none usable.
		{name: "only null answers", file: "a.jsonl", content: `{"problem": "p", "answer": null}` + "\n", want: []string{"a.jsonl: none of the 1 records is usable (first skipped: ", "a.jsonl:1: null answer)"}},
		{name: "problem of wrong type: number", file: "a.jsonl", content: `{"problem": 12, "answer": "1"}` + "\n", want: []string{"a.jsonl:1:", `field "problem": wrong type: a number`}},
		{name: "chat list without user message", file: "a.jsonl", content: `{"prompt": [{"role": "system", "content": "x"}], "answer": "1"}` + "\n", want: []string{"a.jsonl:1:", `field "prompt": chat message list has no user message`}},
		{name: "chat list of strings", file: "a.jsonl", content: `{"prompt": ["x"], "answer": "1"}` + "\n", want: []string{"a.jsonl:1:", `field "prompt": list element 0 is a string`}},
		{name: "no detectable problem field", file: "a.jsonl", content: `{"text": "p", "answer": "1"}` + "\n", want: []string{"a.jsonl:1:", "no problem field", "[answer text]", "--problem-field"}},
		{name: "no detectable answer field", file: "a.jsonl", content: `{"problem": "p", "label": "1"}` + "\n", want: []string{"a.jsonl:1:", "no answer field", "[label problem]", "--answer-field"}},
		// A name that does not print as it is, a byte order mark's, is
		// quoted: "[answer problem]" named no field "problem" to look
		// for.
		{name: "field names that do not print quoted", file: "a.jsonl", content: `{"\ufeffproblem": "p", "answer": "1"}` + "\n", opt: LoadOptions{ProblemField: "problem"}, want: []string{"a.jsonl:1:", `field "problem": missing (the row's fields: [answer "\ufeffproblem"])`}},
		{name: "explicit field absent", file: "a.jsonl", content: `{"problem": "p", "answer": "1"}` + "\n", opt: LoadOptions{AnswerField: "gold"}, want: []string{"a.jsonl:1:", `field "gold": missing (the row's fields: [answer problem])`}},
		{name: "explicit nested field absent", file: "a.jsonl", content: `{"q": {"text": "p"}, "answer": "1"}` + "\n", opt: LoadOptions{ProblemField: "q.body"}, want: []string{"a.jsonl:1:", `field "q.body": missing (the row's fields: [answer q])`}},
		{name: "nested field under null", file: "a.jsonl", content: `{"prompt": "p", "reward_model": {"ground_truth": "1"}}` + "\n" + `{"prompt": "q", "reward_model": null}` + "\n", want: []string{"a.jsonl:2:", `field "reward_model.ground_truth": missing ("reward_model" is null, want an object)`}},
		{name: "nested field under a string", file: "a.jsonl", content: `{"problem": "p", "meta": {"gold": {"v": "1"}}}` + "\n" + `{"problem": "q", "meta": {"gold": "2"}}` + "\n", opt: LoadOptions{AnswerField: "meta.gold.v"}, want: []string{"a.jsonl:2:", `field "meta.gold.v": missing ("meta.gold" is a string, want an object)`}},
		// One field read as both the problem and its gold answer: every
		// problem was kept, graded against its own text, in silence.
		{name: "answer field named the detected problem field", file: "a.jsonl", content: `{"problem": "p", "answer": "1"}` + "\n", opt: LoadOptions{AnswerField: "problem"}, want: []string{`a.jsonl:1: field "problem" is read as the problem (detected) and as the gold answer (--answer-field): every gold answer would be its problem's own text`}},
		{name: "problem field named the detected answer field", file: "a.jsonl", content: `{"question": "p", "answer": "1"}` + "\n", opt: LoadOptions{ProblemField: "answer"}, want: []string{`a.jsonl:1: field "answer" is read as the problem (--problem-field) and as the gold answer (detected)`}},
		{name: "both fields named alike", file: "a.jsonl", content: `{"q": "p", "answer": "1"}` + "\n", opt: LoadOptions{ProblemField: "q", AnswerField: "q"}, want: []string{`a.jsonl:1: field "q" is read as the problem (--problem-field) and as the gold answer (--answer-field)`}},
		{name: "explicit id field absent", file: "a.jsonl", content: `{"problem": "p", "answer": "1", "id": 3}` + "\n", opt: LoadOptions{IDField: "nope"}, want: []string{"a.jsonl:1:", `id field "nope": missing or null`}},
		// An empty id of a named field was taken for none: the row got a
		// positional id in silence, where a missing or null one is refused.
		{name: "explicit id field empty in a later row", file: "a.jsonl", content: `{"problem": "p", "answer": "1", "key": "k1"}` + "\n" + `{"problem": "q", "answer": "2", "key": " "}` + "\n", opt: LoadOptions{IDField: "key"}, want: []string{"a.jsonl:2:", `id field "key": empty, want the row's id`}},
		{name: "explicit id field null in a later row", file: "a.jsonl", content: `{"problem": "p", "answer": "1", "key": 3}` + "\n" + `{"problem": "q", "answer": "2", "key": null}` + "\n", opt: LoadOptions{IDField: "key"}, want: []string{"a.jsonl:2:", `id field "key": missing or null`}},
		{name: "empty jsonl", file: "a.jsonl", content: "", want: []string{"a.jsonl", "no records (empty file)"}},
		{name: "blank-only jsonl", file: "a.jsonl", content: "\n  \n", want: []string{"no records (empty file)"}},
		{name: "empty json", file: "a.json", content: "", want: []string{"a.json", "no records"}},
		{name: "empty json array", file: "a.json", content: "[]", want: []string{"a.json", "no records"}},
		// A file that holds a document, with no row: not "(empty file)".
		{name: "empty json array, said", file: "a.json", content: "\xEF\xBB\xBF[ ]\n", want: []string{"a.json: no records (its array of rows is empty)"}},
		{name: "empty json array in an object", file: "a.json", content: `{"data": []}`, want: []string{"a.json: no records (its array of rows is empty)"}},
		{name: "blank json", file: "a.json", content: "\xEF\xBB\xBF \n", want: []string{"a.json: no records (empty file)"}},
		{name: "every row skipped", file: "a.jsonl", content: `{"problem": "", "answer": "1"}` + "\n", want: []string{"none of the 1 records is usable", "a.jsonl:1: empty problem"}},
		{name: "json syntax error names the line", file: "a.json", content: "[\n{\"problem\": \"p\", \"answer\": \"1\"},\n{\"problem\": \"q\" \"answer\": \"2\"}\n]", want: []string{"a.json:3:", "malformed JSON"}},
		{name: "json truncated", file: "a.json", content: "[{\"problem\": \"p\", \"answer\": \"1\"}", want: []string{"a.json:1:", "malformed JSON"}},
		// A file cut short (a download or a writer stopped): it said
		// "malformed JSON: EOF" or "unexpected EOF".
		{name: "json cut inside a row", file: "a.json", content: "[{\"problem\": \"p\", \"answer\": \"1\"},\n{\"problem\": \"q\", \"ans", want: []string{"a.json:2: malformed JSON: the file ends inside the JSON document (cut short?)"}},
		{name: "json cut after a row, newline last", file: "a.json", content: "[\n{\"problem\": \"p\", \"answer\": \"1\"},\n", want: []string{"a.json:2: malformed JSON: the file ends inside the JSON document (cut short?)"}},
		{name: "jsonl last line cut after a key", file: "a.jsonl", content: `{"problem": "p", "answer": "1"}` + "\n" + `{"problem": "q", "answer":`, want: []string{"a.jsonl:2: malformed JSON: the line ends inside its JSON value (cut short?)"}},
		{name: "jsonl line cut inside a string", file: "a.jsonl", content: `{"problem": "p", "answer": "1}` + "\n", want: []string{"a.jsonl:1: malformed JSON: the line ends inside its JSON value (cut short?)"}},
		{name: "json top level string", file: "a.json", content: `"rows"`, want: []string{"a.json:1:", "top-level JSON value is a string"}},
		// An object of rows keyed by id with an entry that is no row (a
		// version number, a row removed as null) was "not an object of
		// rows", said to look like JSON Lines to name .jsonl: the entry
		// is refused as an array's element of its type is.
		{name: "json object of rows with a number", file: "a.json", content: "{\"version\": 2,\n \"a\": {\"problem\": \"p\", \"answer\": \"1\"},\n \"b\": {\"problem\": \"q\", \"answer\": \"2\"}}",
			want: []string{`a.json:row "version" (line 1): row is a number, want an object`}},
		{name: "json object of rows with a null", file: "a.json", content: "{\n \"a\": {\"problem\": \"p\", \"answer\": \"1\"},\n \"b\": null\n}\n",
			want: []string{`a.json:row "b" (line 3): row is null, want an object`}},
		// One row, its answer nested, is still one row named .json.
		{name: "one row with a nested answer named .json", file: "a.json", content: `{"question": "p", "reward_model": {"ground_truth": "1"}, "extra_info": {"index": 0}}` + "\n",
			want: []string{"holds 0 arrays", "looks like JSON Lines", "--format jsonl"}},
		{name: "json object with two arrays", file: "a.json", content: `{"a": [], "b": []}`, want: []string{"holds 2 arrays"}},
		// A file of splits: the arrays named, and how to take one (no
		// option picks an array); it said "holds 2 arrays" alone.
		{name: "json object of splits", file: "splits.json", content: `{"version": 1, "train": [{"problem": "p", "answer": "1"}], "test": [{"problem": "q", "answer": "2"}]}`,
			want: []string{`splits.json: top-level JSON object holds 2 arrays ("train", "test") and is not an object of rows; want an array of rows, an object of rows keyed by id, or an object with one array of rows: extract the split to use into a file of its own, e.g. jq '.train' `, `splits.json > `, `splits-train.json`}},
		{name: "json object of splits with a key jq cannot name bare", file: "s.json", content: `{"my split": [], "test-2": []}`,
			want: []string{`holds 2 arrays ("my split", "test-2")`, `e.g. jq '.["my split"]' `}},
		{name: "json array element not an object", file: "a.json", content: `[1]`, want: []string{"a.json:row 0 (line 1):", "row is a number"}},
		{name: "json array row names its line", file: "a.json", content: "[\n {\n  \"problem\": \"p\",\n  \"answer\": \"1\"\n },\n {\n  \"problem\": \"q\",\n  \"answer\": true\n }\n]\n", want: []string{`a.json:row 1 (line 6): field "answer": wrong type: a boolean`}},
		{name: "json object of rows names the line", file: "a.json", content: "{\n \"a\": {\"problem\": \"p\", \"answer\": \"1\"},\n \"b\": {\"problem\": \"q\"}\n}\n", want: []string{`a.json:row "b" (line 3): field "answer": missing`}},
		{name: "json object with an array names the line", file: "a.json", content: "{\"data\": [\n{\"problem\": \"p\", \"answer\": \"1\"},\n{\"problem\": \"q\", \"answer\": true}\n]}", want: []string{`a.json:data row 1 (line 3): field "answer": wrong type: a boolean`}},
		{name: "json trailing garbage", file: "a.json", content: `[{"problem": "p", "answer": "1"}] x`, want: []string{"a.json:1:", "malformed JSON"}},
		{name: "parquet extension, not parquet", file: "a.parquet", content: "problem,answer\np,1\n", want: []string{"a.parquet", "not a readable Parquet file"}},
		// The content's format against the extension's: it said
		// "malformed JSON: invalid character 'P'", or (.json) that a byte
		// was not UTF-8, to convert from Latin-1, or that "PAR1" was
		// missing.
		{name: "parquet named .jsonl", file: "a.jsonl", content: "PAR1\x15\x04\x15\x00", want: []string{"a.jsonl: the file is Parquet (it starts with \"PAR1\"), not JSONL: name it .parquet or pass --format parquet"}},
		{name: "parquet given --format json", file: "a", content: "PAR1\x15\x04\x15\x00", opt: LoadOptions{Format: FormatJSON}, want: []string{"a: the file is Parquet (it starts with \"PAR1\"), not JSON: name it .parquet or pass --format parquet"}},
		{name: "jsonl named .parquet", file: "a.parquet", content: "\xEF\xBB\xBF\n" + `{"problem": "p", "answer": "1"}` + "\n", want: []string{"a.parquet: the file is JSON text, not Parquet: name it .jsonl or .json, or pass --format jsonl or json"}},
		{name: "unknown format option", file: "a.jsonl", content: "{}", opt: LoadOptions{Format: "csv"}, want: []string{`unknown format "csv"`}},
		{name: "undetectable format", file: "a.txt", content: "problem,answer\n", want: []string{"cannot detect the format"}},
		// CSV, which --format cannot name: it was told to give --format
		// jsonl, json or parquet, which would read it as none of them.
		{name: "csv", file: "a.csv", content: "problem,answer\n", want: []string{`a.csv: CSV is not read: convert it to JSONL (with pandas: pd.read_csv("`, `a.csv").to_json("`, `a.jsonl", orient="records", lines=True))`}},
		{name: "tsv", file: "rows.TSV", content: "problem\tanswer\n", want: []string{`rows.TSV: TSV is not read: convert it to JSONL (with pandas: pd.read_csv("`, `rows.TSV", sep="\t").to_json("`, `rows.jsonl", orient="records", lines=True))`}},
		{name: "gzip named .jsonl.gz", file: "a.jsonl.gz", content: "\x1f\x8b\x08\x00\x00\x00\x00\x00", want: []string{"a.jsonl.gz", "gzip-compressed", "decompress it first (gunzip)"}},
		{name: "gzip named .jsonl", file: "a.jsonl", content: "\x1f\x8b\x08\x00\x00\x00\x00\x00", want: []string{"a.jsonl", "gzip-compressed"}},
		{name: "gzip given --format json", file: "a.json.gz", content: "\x1f\x8b\x08\x00", opt: LoadOptions{Format: FormatJSON}, want: []string{"gzip-compressed"}},
		{name: "zstd named .parquet", file: "a.parquet", content: "\x28\xb5\x2f\xfd\x00\x00\x00\x00\x00\x00\x00\x00", want: []string{"zstd-compressed", "(unzstd)"}},
		{name: "xz", file: "a.jsonl.xz", content: "\xfd7zXZ\x00\x00", want: []string{"xz-compressed"}},
		{name: "bzip2", file: "a.jsonl.bz2", content: "BZh91AY", want: []string{"bzip2-compressed"}},
		{name: "zip", file: "a.zip", content: "PK\x03\x04\x14\x00", want: []string{"zip-compressed", "(unzip)"}},
		{name: "latin-1 byte in a jsonl line", file: "a.jsonl", content: `{"problem": "p", "answer": "1"}` + "\n" + `{"problem": "caf` + "\xe9" + `?", "answer": "2"}` + "\n", want: []string{"a.jsonl:2: byte 17 of the line (0xE9) is not valid UTF-8", "convert the file"}},
		{name: "latin-1 byte in a json array", file: "a.json", content: "[\n" + `{"problem": "p", "answer": "1"},` + "\n" + `{"problem": "q", "answer": "` + "\xb0" + `"}` + "\n]", want: []string{"a.json:3: byte 29 of the line (0xB0) is not valid UTF-8", "convert the file"}},
		{name: "duplicate key in a jsonl row", file: "a.jsonl", content: `{"problem": "p", "answer": "1"}` + "\n" + `{"problem": "q", "answer": "1", "answer": "2"}` + "\n", want: []string{"a.jsonl:2: malformed JSON: key \"answer\" appears twice in one object"}},
		{name: "duplicate key in a nested object", file: "a.jsonl", content: `{"problem": "p", "reward_model": {"ground_truth": "1", "ground_truth": "2"}}` + "\n", want: []string{"a.jsonl:1: malformed JSON: key \"ground_truth\" appears twice in one object"}},
		{name: "duplicate key in a json array's row", file: "a.json", content: "[\n" + `{"problem": "p", "answer": "1"},` + "\n" + `{"problem": "q",` + "\n" + `"problem": "r", "answer": "2"}` + "\n]", want: []string{"a.json:4: malformed JSON: key \"problem\" appears twice in one object"}},
		{name: "duplicate key in a json object of rows", file: "a.json", content: `{"x": {"problem": "p", "answer": "1", "answer": "2"}}`, want: []string{"a.json:1: malformed JSON: key \"answer\" appears twice in one object"}},
		// The top-level object's own keys: a row's id given twice was
		// kept twice (the second as "a~2"), and two arrays of one name
		// were called two splits, where JSON readers keep the last.
		{name: "duplicate id key in a json object of rows", file: "a.json", content: "{\"a\": {\"problem\": \"p\", \"answer\": \"1\"},\n \"a\": {\"problem\": \"q\", \"answer\": \"2\"}}", want: []string{"a.json:2: malformed JSON: key \"a\" appears twice in one object; which value is meant is ambiguous"}},
		{name: "duplicate array key in a json object", file: "a.json", content: `{"data": [{"problem": "p", "answer": "1"}], "data": []}`, want: []string{"a.json:1: malformed JSON: key \"data\" appears twice in one object; which value is meant is ambiguous"}},
		{name: "utf-16 with a byte order mark", file: "a.jsonl", content: "\xff\xfe{\x00\"\x00p\x00\"\x00:\x00", want: []string{"a.jsonl: the file is UTF-16 text", "iconv -f UTF-16 -t UTF-8"}},
		{name: "utf-16be without a byte order mark", file: "a.json", content: "\x00[\x00{\x00\"", want: []string{"a.json: the file is UTF-16 text"}},
		{name: "utf-16le without a byte order mark, no extension", file: "rows", content: "{\x00\"\x00p\x00", want: []string{"rows: the file is UTF-16 text"}},
		{name: "missing file", file: "nope.jsonl", noFile: true, want: []string{"nope.jsonl", "no such file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			if !tc.noFile {
				path = writeFile(t, tc.file, tc.content)
			}
			ds, err := Load(path, tc.opt)
			require.Error(t, err, "loaded %+v", ds)
			require.Nil(t, ds)
			require.True(t, strings.HasPrefix(err.Error(), "data: "), "error %q lacks the package prefix", err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestLoadRepeatedKeyUnread: a key repeated in an object spiral does not
// read (a row's metadata) is no error, since no value it reads is
// ambiguous; it failed the whole file as "malformed JSON: key \"tag\"
// appears twice in one object". One repeated in a row's own keys, or
// anywhere in a field read (the problem's chat messages, a nested answer
// or id), is still refused, at the line of the repeat.
func TestLoadRepeatedKeyUnread(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		opt                 LoadOptions
		wantErr             string
	}{
		{name: "jsonl metadata", file: "a.jsonl", content: `{"problem": "p", "answer": "1", "meta": {"tag": "a", "tag": "b"}}` + "\n"},
		{name: "json array metadata", file: "a.json", content: "[\n{\"problem\": \"p\", \"answer\": \"1\",\n \"meta\": [{\"tag\": \"a\",\n \"tag\": \"b\"}]}\n]"},
		{name: "json object of rows metadata", file: "a.json", content: `{"x": {"problem": "p", "answer": "1", "meta": {"tag": "a", "tag": "b"}}}`},
		{name: "json object beside its array of rows", file: "a.json", content: `{"info": {"v": 1, "v": 2}, "data": [{"problem": "p", "answer": "1"}]}`},
		{name: "chat message", file: "a.json", content: "[\n{\"problem\": [{\"role\": \"user\",\n \"content\": \"p\", \"content\": \"q\"}], \"answer\": \"1\"}\n]",
			wantErr: "data: a.json:3: malformed JSON: key \"content\" appears twice in one object; which value is meant is ambiguous"},
		{name: "nested answer", file: "a.json", content: "[\n{\"problem\": \"p\",\n \"reward_model\": {\"ground_truth\": \"1\",\n \"ground_truth\": \"2\"}}\n]",
			wantErr: "data: a.json:4: malformed JSON: key \"ground_truth\" appears twice in one object; which value is meant is ambiguous"},
		{name: "object on the answer's path", file: "a.jsonl", content: `{"problem": "p", "x": {"rm": {"gt": "1"}, "rm": {"gt": "2"}}}` + "\n", opt: LoadOptions{AnswerField: "x.rm.gt"},
			wantErr: "data: a.jsonl:1: malformed JSON: key \"rm\" appears twice in one object; which value is meant is ambiguous"},
		{name: "named nested id", file: "a.jsonl", content: `{"problem": "p", "answer": "1", "meta": {"id": "a", "id": "b"}}` + "\n", opt: LoadOptions{IDField: "meta.id"},
			wantErr: "data: a.jsonl:1: malformed JSON: key \"id\" appears twice in one object; which value is meant is ambiguous"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.file, tc.content)
			ds, err := Load(path, tc.opt)
			if tc.wantErr != "" {
				require.EqualError(t, err, strings.Replace(tc.wantErr, tc.file, path, 1))
				return
			}
			require.NoError(t, err)
			require.Len(t, ds.Problems, 1)
			require.Equal(t, [2]string{"p", "1"}, [2]string{ds.Problems[0].Problem, ds.Problems[0].Answer})
		})
	}
}

func TestNewDataset(t *testing.T) {
	ds := NewDataset("gen", []Problem{
		{Problem: "a", Answer: "1"},
		{Problem: "a", Answer: "2"},
		{Problem: " a", Answer: "1"},
		{ID: "k", Problem: "b", Answer: "3", Source: "here"},
		{Problem: "c", Answer: ""},
	})
	require.Equal(t, 5, ds.Records)
	require.Equal(t, []Problem{
		{ID: "gen:0", Problem: "a", Answer: "1", Source: "gen:row 0"},
		{ID: "k", Problem: "b", Answer: "3", Source: "here"},
	}, ds.Problems)
	require.Equal(t, []SkippedRow{
		{Source: "gen:row 1", Reason: `duplicate problem (first at gen:row 0, kept) with another gold answer: "2", the first's "1"`},
		{Source: "gen:row 2", Reason: "duplicate problem (first at gen:row 0)"},
		{Source: "gen:row 4", Reason: "empty answer"},
	}, ds.Skipped())
}

// FuzzLoadJSONL checks that no input makes Load panic, and that whatever it
// keeps has a non-empty problem and answer.
func FuzzLoadJSONL(f *testing.F) {
	f.Add([]byte(`{"problem": "p", "answer": "1"}` + "\n"))
	f.Add([]byte(`{"prompt": [{"role": "user", "content": "x"}], "reward_model": {"ground_truth": 2.0}}`))
	f.Add([]byte(`{"question": "q", "solution": "\\boxed{\\frac{1}{2}"}`))
	f.Add([]byte("[{\"problem\": \"p\", \"answer\": 3}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, name := range []string{"f.jsonl", "f.json", "f"} {
			ds, err := LoadBytes(name, b, LoadOptions{})
			if err != nil {
				continue
			}
			for _, pr := range ds.Problems {
				if strings.TrimSpace(pr.Problem) == "" || strings.TrimSpace(pr.Answer) == "" {
					t.Fatalf("kept an empty problem or answer: %+v", pr)
				}
			}
		}
	})
}

func BenchmarkLoadJSONL(b *testing.B) {
	var sb strings.Builder
	for i := range 2000 {
		sb.WriteString(`{"question": "What is ` + strings.Repeat("x", i%50) + `?", "answer": "Step one.\n#### ` + string(rune('0'+i%10)) + `", "id": ` + "1" + `}` + "\n")
	}
	p := filepath.Join(b.TempDir(), "bench.jsonl")
	require.NoError(b, os.WriteFile(p, []byte(sb.String()), 0o644))
	for b.Loop() {
		if _, err := Load(p, LoadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLoadBytesMatchesLoad checks that the in-memory path gives the same
// dataset as reading the file, for each format.
func TestLoadBytesMatchesLoad(t *testing.T) {
	for _, path := range []string{"testdata/verl.parquet", "testdata/flat.parquet"} {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		want, err := Load(path, LoadOptions{})
		require.NoError(t, err)
		got, err := LoadBytes(path, b, LoadOptions{})
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	content := `{"problem": "p", "answer": "1"}` + "\n"
	path := writeFile(t, "x.jsonl", content)
	want, err := Load(path, LoadOptions{})
	require.NoError(t, err)
	got, err := LoadBytes(path, []byte(content), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestShared: the held-out problems that are training problems up to
// white space, in held's order; an answer or id of its own does not make
// a problem another.
func TestShared(t *testing.T) {
	train := []Problem{{ID: "a", Problem: "What is  1+1?", Answer: "2"}, {ID: "b", Problem: "Solve x+2=5.", Answer: "3"}}
	for _, tc := range []struct {
		name string
		held []Problem
		want []string
	}{
		{"none", []Problem{{ID: "h1", Problem: "What is 1+2?"}}, nil},
		{"spacing", []Problem{{ID: "h1", Problem: "What is 1+2?"}, {ID: "h2", Problem: "Solve x+2=5.\n"}, {ID: "h3", Problem: " What is 1+1? "}}, []string{"h2", "h3"}},
		{"other answer and id", []Problem{{ID: "z", Problem: "What is 1+1?", Answer: "3"}}, []string{"z"}},
		{"case matters", []Problem{{ID: "h1", Problem: "what is 1+1?"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Shared(train, tc.held) {
				got = append(got, p.ID)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestRenamedIDs: the problems whose id repeated an earlier one's, made
// unique, are counted, with the first (where, the id, where the earlier
// one is, the new id): they were renamed without a trace.
func TestRenamedIDs(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		count         int
		first         string
	}{
		{name: "none", content: `{"id": "a", "problem": "p1", "answer": "1"}` + "\n" + `{"id": "b", "problem": "p2", "answer": "2"}` + "\n"},
		{name: "two repeats", count: 2,
			content: `{"id": "b", "problem": "p0", "answer": "0"}` + "\n" + `{"id": "a", "problem": "p1", "answer": "1"}` + "\n" +
				`{"id": "a", "problem": "p2", "answer": "2"}` + "\n" + `{"id": "a", "problem": "p3", "answer": "3"}` + "\n",
			first: `%s:3 repeats the id "a" of %s:2, renamed "a~2"`},
		{name: "a duplicate problem is skipped, not renamed", content: `{"id": "a", "problem": "p1", "answer": "1"}` + "\n" + `{"id": "a", "problem": "p1", "answer": "1"}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "ids.jsonl", tc.content)
			ds, err := Load(path, LoadOptions{})
			require.NoError(t, err)
			n, first := ds.RenamedIDs()
			require.Equal(t, tc.count, n)
			if tc.count > 0 {
				require.Equal(t, fmt.Sprintf(tc.first, path, path), first.String())
			}
		})
	}
}

// TestUnbalancedAnswers: the problems kept whose gold answer has a
// brace not closed or not opened ("{3", an unclosed "\boxed{3"), which no
// response is ever graded right against, are counted with the first's
// source; escaped braces (set notation, "\left\{ x \right.") are not
// braces of a group.
func TestUnbalancedAnswers(t *testing.T) {
	row := func(p, a string) string {
		b, err := json.Marshal(map[string]string{"problem": p, "answer": a})
		if err != nil {
			panic(err)
		}
		return string(b) + "\n"
	}
	for _, tc := range []struct {
		name, content string
		count         int
		first         string // its line
	}{
		{name: "none", content: row("p1", `\frac{1}{2}`) + row("p2", `\{1, 2\}`) + row("p3", `\left\{ 1 \right.`) + row("p4", `\boxed{5}`) + row("p5", `a\\{b}`)},
		{name: "unclosed boxed and group", count: 2, first: "2",
			content: row("p1", "1") + row("p2", `\boxed{3`) + row("p3", "{3") + row("p4", "4")},
		{name: "closed before opened", count: 2, first: "1", content: row("p1", "3}") + row("p2", "}{") + row("p3", "3")},
		{name: "a skipped row is not counted", content: row("p1", "1") + row("p1", "{3")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "gold.jsonl", tc.content)
			ds, err := Load(path, LoadOptions{})
			require.NoError(t, err)
			n, first := ds.UnbalancedAnswers()
			require.Equal(t, tc.count, n)
			want := ""
			if tc.count > 0 {
				want = path + ":" + tc.first
			}
			require.Equal(t, want, first)
		})
	}
}

// TestLoadOptionsValidate: the data flags' usage errors, each said on
// its own line where several are found at once.
func TestLoadOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  LoadOptions
		want string // "" for none
	}{
		{"nothing given", LoadOptions{}, ""},
		{"fields given, format unknown", LoadOptions{ProblemField: "q", AnswerField: "a", IDField: "q", Format: "xml"}, `--format "xml": want jsonl, json or parquet (or nothing, to detect it)`},
		{"known format", LoadOptions{Format: FormatParquet}, ""},
		{"one field as problem and answer", LoadOptions{ProblemField: "q", AnswerField: "q"}, `--problem-field and --answer-field both name "q": every gold answer would be its problem's own text`},
		{"both", LoadOptions{ProblemField: "q", AnswerField: "q", Format: "csv"},
			`--problem-field and --answer-field both name "q": every gold answer would be its problem's own text` + "\n" + `--format "csv": want jsonl, json or parquet (or nothing, to detect it)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opt.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

// TestLoadIDDetectedPastFirstRow: the id field is detected in the first
// row that holds one, not in the first row alone; the rows without it,
// before it or after, are numbered (--id-field's "rows without it
// numbered").
func TestLoadIDDetectedPastFirstRow(t *testing.T) {
	cases := []struct {
		name, file, content string
		opt                 LoadOptions
		idField             string
		ids                 []string
	}{
		{
			name:    "first row without an id",
			file:    "f.jsonl",
			content: `{"problem": "b", "answer": "2"}` + "\n" + `{"problem": "a", "answer": "1", "id": "x"}` + "\n" + `{"problem": "c", "answer": "3"}` + "\n",
			idField: "id",
			ids:     []string{"f.jsonl:0", "x", "f.jsonl:2"},
		},
		{
			name:    "json array, the id of the third row",
			file:    "f.json",
			content: `[{"problem": "b", "answer": "2"}, {"problem": "a", "answer": "1"}, {"problem": "c", "answer": "3", "unique_id": "u/3"}]`,
			idField: "unique_id",
			ids:     []string{"f.json:0", "f.json:1", "u/3"},
		},
		{
			name:    "no row with an id",
			file:    "f.jsonl",
			content: `{"problem": "b", "answer": "2"}` + "\n" + `{"problem": "a", "answer": "1"}` + "\n",
			ids:     []string{"f.jsonl:0", "f.jsonl:1"},
		},
		{
			name:    "row numbers asked for",
			file:    "f.jsonl",
			content: `{"problem": "b", "answer": "2"}` + "\n" + `{"problem": "a", "answer": "1", "id": "x"}` + "\n",
			opt:     LoadOptions{IDField: "-"},
			ids:     []string{"f.jsonl:0", "f.jsonl:1"},
		},
		{
			name:    "object of rows keyed by id",
			file:    "f.json",
			content: `{"k1": {"problem": "b", "answer": "2"}, "k2": {"problem": "a", "answer": "1", "id": "x"}}`,
			ids:     []string{"k1", "k2"},
		},
		{
			// "-" is row numbers whatever the file's shape: not the
			// keys of an object of rows.
			name:    "object of rows, row numbers asked for",
			file:    "f.json",
			content: `{"k1": {"problem": "b", "answer": "2"}, "k2": {"problem": "a", "answer": "1", "id": "x"}}`,
			opt:     LoadOptions{IDField: "-"},
			ids:     []string{"f.json:0", "f.json:1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := Load(writeFile(t, tc.file, tc.content), tc.opt)
			require.NoError(t, err)
			var ids []string
			for _, p := range ds.Problems {
				ids = append(ids, p.ID)
			}
			require.Equal(t, tc.ids, ids)
			require.Equal(t, tc.idField, ds.Mapping.IDField)
			require.Equal(t, [2]string{"problem", "answer"}, [2]string{ds.Mapping.ProblemField, ds.Mapping.AnswerField})
		})
	}
}

// TestLoadFieldsOfLaterRows: the problem and answer fields are detected
// once per file, in its first row, and read in every row. A later row
// without that field but with another that detection knows is an error
// naming both rows' fields (it said only that the field was missing);
// one holding that field beside one detection takes before it (an
// "answer" beside the first row's worked "solution") is read by the
// file's field as before, and counted with the first such row
// (Dataset.OtherFields), which was silent.
func TestLoadFieldsOfLaterRows(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		opt           LoadOptions
		err           string // "": loads; %[1]s is the path
		answers       []string
		others        []OtherField // %[1]s in First is the path
	}{
		{name: "rows agree", content: `{"problem": "a", "solution": "so \\boxed{1}"}` + "\n" + `{"problem": "b", "solution": "so \\boxed{2}"}` + "\n",
			answers: []string{"1", "2"}},
		{name: "a later row's answer in another field",
			content: `{"problem": "a", "solution": "so \\boxed{1}"}` + "\n" + `{"problem": "b", "answer": "2"}` + "\n",
			err:     `data: %[1]s:2: field "solution": missing (the row's fields: [answer problem]); the answer field "solution" is the first row's (%[1]s:1), "answer" this row's: name one that every row holds with --answer-field`},
		{name: "a later row's problem in another field",
			content: `{"question": "a", "answer": "1"}` + "\n" + `{"problem": "b", "answer": "2"}` + "\n",
			err:     `data: %[1]s:2: field "question": missing (the row's fields: [answer problem]); the problem field "question" is the first row's (%[1]s:1), "problem" this row's: name one that every row holds with --problem-field`},
		{name: "later rows hold an answer detection takes first",
			content: `{"problem": "a", "solution": "so \\boxed{1}"}` + "\n" + `{"problem": "b", "answer": "7", "solution": "so \\boxed{2}"}` + "\n" +
				`{"problem": "c", "solution": "so \\boxed{3}"}` + "\n" + `{"problem": "d", "answer": "9", "solution": "so \\boxed{4}"}` + "\n",
			answers: []string{"1", "2", "3", "4"},
			others:  []OtherField{{Role: "answer", Field: "solution", Other: "answer", Rows: 2, First: "%[1]s:2"}}},
		{name: "and a problem",
			content: `{"question": "a", "answer": "1"}` + "\n" + `{"question": "b", "problem": "B", "answer": "2"}` + "\n",
			answers: []string{"1", "2"},
			others:  []OtherField{{Role: "problem", Field: "question", Other: "problem", Rows: 1, First: "%[1]s:2"}}},
		{name: "a field named is read as it is",
			content: `{"problem": "a", "solution": "so \\boxed{1}"}` + "\n" + `{"problem": "b", "answer": "7", "solution": "so \\boxed{2}"}` + "\n",
			opt:     LoadOptions{AnswerField: "solution"},
			answers: []string{"1", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "f.jsonl", tc.content)
			ds, err := Load(path, tc.opt)
			if tc.err != "" {
				require.EqualError(t, err, fmt.Sprintf(tc.err, path))
				return
			}
			require.NoError(t, err)
			var answers []string
			for _, p := range ds.Problems {
				answers = append(answers, p.Answer)
			}
			require.Equal(t, tc.answers, answers)
			var want []OtherField
			for _, o := range tc.others {
				o.First = fmt.Sprintf(o.First, path)
				want = append(want, o)
			}
			require.Equal(t, want, ds.OtherFields())
		})
	}
}
