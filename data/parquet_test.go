package data

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"
)

// parquetWant is the expectation file written by testdata/make_parquet.py.
type parquetWant struct {
	Problems     [][2]string `json:"problems"`
	IDs          []string    `json:"ids"` // checked when present
	Skipped      int         `json:"skipped"`
	ProblemField string      `json:"problem_field"`
	AnswerField  string      `json:"answer_field"`
}

// checkParquetDir loads the files make_parquet.py wrote into dir and
// compares them with the script's own expectations.
func checkParquetDir(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"verl", "flat", "decimal", "typed", "nestedtyped", "float32", "uint64"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, name+".want.json"))
			require.NoError(t, err)
			var w parquetWant
			require.NoError(t, json.Unmarshal(b, &w))
			ds, err := Load(filepath.Join(dir, name+".parquet"), LoadOptions{})
			require.NoError(t, err)
			require.Equal(t, FormatParquet, ds.Format)
			var got [][2]string
			for _, p := range ds.Problems {
				got = append(got, [2]string{p.Problem, p.Answer})
			}
			require.Equal(t, w.Problems, got)
			require.Len(t, ds.Skipped(), w.Skipped)
			require.Equal(t, w.ProblemField, ds.Mapping.ProblemField)
			require.Equal(t, w.AnswerField, ds.Mapping.AnswerField)
			if w.IDs != nil {
				var ids []string
				for _, p := range ds.Problems {
					ids = append(ids, p.ID)
				}
				require.Equal(t, w.IDs, ids)
			}
		})
	}
	// A UINT64 in a struct, named by its dotted path, as the top-level
	// column is.
	t.Run("uint64 nested", func(t *testing.T) {
		ds, err := Load(filepath.Join(dir, "uint64.parquet"), LoadOptions{AnswerField: "reward_model.ground_truth"})
		require.NoError(t, err)
		var got []string
		for _, p := range ds.Problems {
			got = append(got, p.Answer)
		}
		require.Equal(t, []string{"18446744073709551615", "9223372036854775808", "7"}, got)
	})
	// A column of a logical type not read as its value, named as the
	// answer, is an error naming the type, never a wrong gold answer.
	for _, tc := range []struct{ file, field, kind string }{
		{"typed", "when", "DATE"}, {"typed", "half", "FLOAT16"}, {"typed", "at", "TIMESTAMP(isAdjustedToUTC=false,unit=MILLIS)"},
		{"nestedtyped", "reward_model.when", "DATE"}, {"nestedtyped", "reward_model.half", "FLOAT16"},
	} {
		t.Run("unread "+tc.field, func(t *testing.T) {
			_, err := Load(filepath.Join(dir, tc.file+".parquet"), LoadOptions{AnswerField: tc.field})
			require.ErrorContains(t, err, tc.file+`.parquet:row 0: field "`+tc.field+`": wrong type: a Parquet `+tc.kind+` value, which spiral does not read (write the column as a string)`)
		})
	}
	t.Run("struct read around its unread fields", func(t *testing.T) {
		ds, err := Load(filepath.Join(dir, "nestedtyped.parquet"), LoadOptions{AnswerField: "reward_model.ground_truth"})
		require.NoError(t, err)
		require.Equal(t, "4", ds.Problems[1].Answer)
	})
	t.Run("wrong type", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "wrongtype.parquet"), LoadOptions{})
		require.ErrorContains(t, err, `wrongtype.parquet:row 0: field "answer": wrong type: a list`)
	})
	t.Run("not UTF-8", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "latin1.parquet"), LoadOptions{})
		require.ErrorContains(t, err, `latin1.parquet:row 1: field "answer": byte 3 (0xB0) is not valid UTF-8`)
	})
	t.Run("empty", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "empty.parquet"), LoadOptions{})
		// A file with a schema and no row, not an empty file, as it said.
		require.ErrorContains(t, err, "empty.parquet: no records (the file holds 0 rows)")
	})
}

// TestParquetCommitted reads the pyarrow-written files committed under
// testdata (regenerate with testdata/make_parquet.py).
func TestParquetCommitted(t *testing.T) {
	checkParquetDir(t, "testdata")
}

// TestParquetFromPyarrow writes the files afresh with pyarrow, when it is
// installed, so the test follows the current pyarrow release.
func TestParquetFromPyarrow(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found; TestParquetCommitted covers the committed pyarrow files")
	}
	dir := t.TempDir()
	out, err := exec.Command(py, filepath.Join("testdata", "make_parquet.py"), dir).CombinedOutput()
	if err != nil && strings.Contains(string(out), "No module named 'pyarrow'") {
		t.Skip("pyarrow not installed (pip install pyarrow); TestParquetCommitted covers the committed files")
	}
	require.NoError(t, err, "make_parquet.py: %s", out)
	checkParquetDir(t, dir)
}

// FuzzLoadParquet checks that corrupt Parquet input is an error, never a
// panic or an allocation of the sizes it declares (checkParquetFrame,
// checkParquetPages).
func FuzzLoadParquet(f *testing.F) {
	for _, name := range []string{"verl", "flat", "wrongtype", "latin1", "empty"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".parquet"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := LoadBytes("f.parquet", b, LoadOptions{})
		if err == nil && len(ds.Problems) == 0 {
			t.Fatal("Load returned a dataset without problems")
		}
	})
}

// TestParquetLZ4RawRefused: a file whose columns are LZ4_RAW-compressed
// (pyarrow's compression="lz4") is refused before any page is read,
// naming the column and what to do: parquet-go v0.32.0 keeps a stale
// buffer for a page that compresses less than 3:1 (parquet-go issue
// #608: "decoding level expected N values but got only 0" or worse), and
// doubles its buffer without end on a corrupt page.
func TestParquetLZ4RawRefused(t *testing.T) {
	type row struct {
		Problem string `parquet:"problem"`
		Answer  string `parquet:"answer"`
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		rows int
	}{{"pages that compress less than 3:1", 400}, {"small pages", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			rows := make([]row, tc.rows)
			for i := range rows {
				rows[i] = row{Problem: fmt.Sprintf("Find x if x = %d.", r.Uint64()), Answer: strconv.Itoa(r.IntN(1000))}
			}
			var b bytes.Buffer
			require.NoError(t, parquet.Write(&b, rows, parquet.Compression(&parquet.Lz4Raw)))
			_, err := LoadBytes("lz4.parquet", b.Bytes(), LoadOptions{})
			require.EqualError(t, err, `data: lz4.parquet: column "problem" is LZ4_RAW-compressed, which the Parquet reader spiral uses (parquet-go v0.32.0) decodes wrongly (its issue #608); write the file with another compression, as pyarrow.parquet.write_table(pyarrow.parquet.read_table(IN), OUT, compression="zstd") does`)
		})
	}
}

// TestParquetPageSizesChecked: a page whose ZSTD frame declares more
// bytes than the page header's uncompressed size is corrupt data, an
// error naming the column and page, before parquet-go's decoder
// allocates what the frame declares (up to 64 GiB: FuzzLoadParquet found
// "fatal error: runtime: out of memory" from one flipped byte).
func TestParquetPageSizesChecked(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "flat.parquet")) // ZSTD pages
	require.NoError(t, err)
	i := bytes.Index(b, []byte("\x28\xb5\x2f\xfd")) // the first page's frame: column "id"'s dictionary
	require.Positive(t, i)
	b[i+4] = 0xC0 // frame header: an 8-byte content size after a window descriptor
	b[i+5] = 0    // a 1 KiB window
	binary.LittleEndian.PutUint64(b[i+6:], 1<<30)
	_, err = LoadBytes("zstd.parquet", b, LoadOptions{})
	require.EqualError(t, err, `data: zstd.parquet: corrupt Parquet data: column "id", row group 0, page at byte 4: its ZSTD frame declares 1073741824 bytes uncompressed, the page header 25`)
}

// TestParquetMissingCells: a null cell (an optional column's, as
// pyarrow writes a None or pandas' NaN) as the problem or answer, and a
// NaN in a float answer column (a missing number, pandas' and numpy's),
// skip the row as an empty one does; they refused the whole file. A NaN
// is never the gold answer "NaN", which only a response "NaN" matches.
func TestParquetMissingCells(t *testing.T) {
	type nullable struct {
		Problem *string `parquet:"problem,optional"`
		Answer  *string `parquet:"answer,optional"`
	}
	type float struct {
		Problem string  `parquet:"problem"`
		Answer  float64 `parquet:"answer"`
	}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		rows    any
		skipped []SkippedRow
	}{
		{
			name: "null cells",
			rows: []nullable{{str("p0"), str("1")}, {str("p1"), nil}, {nil, str("2")}, {nil, nil}},
			skipped: []SkippedRow{
				{Source: "m.parquet:row 1", Reason: "null answer"},
				{Source: "m.parquet:row 2", Reason: "null problem"},
				{Source: "m.parquet:row 3", Reason: "null problem"},
			},
		},
		{
			name:    "NaN answer",
			rows:    []float{{"p0", 1}, {"p1", math.NaN()}},
			skipped: []SkippedRow{{Source: "m.parquet:row 1", Reason: "answer NaN, a missing value"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			switch rows := tc.rows.(type) {
			case []nullable:
				require.NoError(t, parquet.Write(&b, rows))
			case []float:
				require.NoError(t, parquet.Write(&b, rows))
			}
			ds, err := LoadBytes("m.parquet", b.Bytes(), LoadOptions{})
			require.NoError(t, err)
			require.Len(t, ds.Problems, 1)
			require.Equal(t, [2]string{"p0", "1"}, [2]string{ds.Problems[0].Problem, ds.Problems[0].Answer})
			require.Equal(t, tc.skipped, ds.Skipped())
		})
	}
}

// TestParquetDecimalOutOfRange: a DECIMAL column whose precision or scale
// no answer can have (a corrupt schema: scale 2^30) is an error naming the
// column, before any value is read: parquet-go scales each value by
// 10^scale, which ran for more than ten minutes.
func TestParquetDecimalOutOfRange(t *testing.T) {
	schema := parquet.NewSchema("row", parquet.Group{
		"answer":  parquet.Decimal(1<<30, 1<<30, parquet.ByteArrayType),
		"problem": parquet.String(),
	})
	var b bytes.Buffer
	w := parquet.NewWriter(&b, schema)
	_, err := w.WriteRows([]parquet.Row{{
		parquet.ByteArrayValue([]byte{1}).Level(0, 0, 0),
		parquet.ByteArrayValue([]byte("p")).Level(0, 0, 1),
	}})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	_, err = LoadBytes("decimal.parquet", b.Bytes(), LoadOptions{})
	require.EqualError(t, err, `data: decimal.parquet: corrupt Parquet schema: column "answer" is DECIMAL(1073741824, 1073741824): want a precision of 1 to 1000 digits and a scale of 0 to the precision`)
}
