package tfevents

import (
	"encoding/hex"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCastagnoli: the checksum is CRC-32C (Castagnoli), whose check value
// of "123456789" is 0xe3069283, masked as TFRecord masks it.
func TestCastagnoli(t *testing.T) {
	require.Equal(t, uint32(0xe3069283), crc32.Checksum([]byte("123456789"), castagnoli))
	// ((0xe3069283 >> 15) | (0xe3069283 << 17)) + 0xa282ead8, by hand:
	// 0x0001c60d | 0x25060000 = 0x2507c60d; + 0xa282ead8 = 0xc78ab0e5.
	require.Equal(t, uint32(0xc78ab0e5), maskedCRC([]byte("123456789")))
}

// golden is a file_version event at wall time 1.5 then one event at step
// 3, wall time 1.5, of the scalars a = 0.5 and search/reward = -0.25, as
// TensorBoard 2.21.0 writes them (its compat.proto.event_pb2 serialised
// and framed by tensorboard.summary.writer.record_writer.RecordWriter):
// the independent check of the framing, the checksums and the encoding.
const golden = "1800000000000000a37f4b2209000000000000f83f1a0d627261696e2e4576656e743a32" +
	"2a28646c" +
	"2d000000000000003c418afb09000000000000f83f10032a200a080a0161150000003f0a140a0d7365617263682f72657761726415000080be" +
	"dcebbb9f"

func TestEncodeGolden(t *testing.T) {
	events := []Event{{Wall: 1.5, Step: 3, Scalars: []Scalar{{"a", 0.5}, {"search/reward", -0.25}}}}
	require.Equal(t, golden, hex.EncodeToString(Encode(1.5, events)))

	b, err := hex.DecodeString(golden)
	require.NoError(t, err)
	version, got, torn, err := Decode(b)
	require.NoError(t, err)
	require.False(t, torn)
	require.Equal(t, FileVersion, version)
	require.Equal(t, events, got)
}

// TestDecodeDamage: a record cut short at its end is torn, not an error;
// a flipped byte anywhere else fails its checksum, naming the record.
func TestDecodeDamage(t *testing.T) {
	b, err := hex.DecodeString(golden)
	require.NoError(t, err)
	first := 8 + 4 + 0x18 + 4 // the file_version record
	for cut := first + 1; cut < len(b); cut++ {
		_, events, torn, err := Decode(b[:cut])
		require.NoError(t, err, "cut at %d", cut)
		require.True(t, torn, "cut at %d", cut)
		require.Empty(t, events, "cut at %d", cut)
	}
	for _, tc := range []struct {
		at   int
		want string
	}{
		{first + 1, "record at byte 40: length checksum"},
		{first + 20, "record at byte 40: data checksum"},
		{first + len(b[first:]) - 1, "record at byte 40: data checksum"},
		{3, "record at byte 0: length checksum"},
	} {
		c := append([]byte(nil), b...)
		c[tc.at] ^= 0x40
		_, _, _, err := Decode(c)
		require.ErrorContains(t, err, tc.want, "byte %d flipped", tc.at)
	}
}

// TestWriterAndTruncate: a Writer's file decodes to what was written; a
// second file started within the same second gets the next second's
// name; Truncate keeps the steps up to its step (the file_version event
// too), drops a torn last record, and removes a file left with none.
func TestWriterAndTruncate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tb")
	now := time.Unix(1700000000, 250_000_000)
	w, err := Create(dir, now)
	require.NoError(t, err)
	var want []Event
	for step := int64(0); step <= 3; step++ {
		e := Event{Wall: WallTime(now) + float64(step), Step: step, Scalars: []Scalar{{"loss", float32(step) / 4}}}
		require.NoError(t, w.Write(e))
		want = append(want, e)
	}
	require.NoError(t, w.Close())
	host, err := os.Hostname()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "events.out.tfevents.1700000000."+host+".spiral"), w.Path())
	b, err := os.ReadFile(w.Path())
	require.NoError(t, err)
	version, got, torn, err := Decode(b)
	require.NoError(t, err)
	require.False(t, torn)
	require.Equal(t, FileVersion, version)
	require.Equal(t, want, got)

	p2, err := WriteFile(dir, now, want[:1])
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "events.out.tfevents.1700000001."+host+".spiral"), p2)
	files, err := Files(dir)
	require.NoError(t, err)
	require.Equal(t, []string{w.Path(), p2}, files)

	// A torn last record (a kill mid-write) goes with the steps past 1.
	require.NoError(t, os.WriteFile(w.Path(), append(b, 0x10, 0, 0), 0o644))
	kept, err := Truncate(w.Path(), 1)
	require.NoError(t, err)
	require.Equal(t, want[:2], kept)
	b, err = os.ReadFile(w.Path())
	require.NoError(t, err)
	version, got, torn, err = Decode(b)
	require.NoError(t, err)
	require.False(t, torn)
	require.Equal(t, FileVersion, version)
	require.Equal(t, want[:2], got)

	kept, err = Truncate(p2, -1)
	require.NoError(t, err)
	require.Empty(t, kept)
	require.NoFileExists(t, p2)
}

// TestCreateFailureLeavesNoFile: a Create whose file_version event
// cannot be written (a full disk) returns the error naming the file and
// leaves no event file behind, not even one cut short, beside those dir
// held.
func TestCreateFailureLeavesNoFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tb")
	now := time.Unix(1700000000, 0)
	earlier, err := WriteFile(dir, now, []Event{{Wall: WallTime(now), Step: 1, Scalars: []Scalar{{"loss", 1}}}})
	require.NoError(t, err)
	full := errors.New("no space left on device")
	for name, write := range map[string]func(*os.File, []byte) (int, error){
		"nothing written":   func(*os.File, []byte) (int, error) { return 0, full },
		"part of the event": func(f *os.File, b []byte) (int, error) { n, _ := f.Write(b[:5]); return n, full },
	} {
		t.Run(name, func(t *testing.T) {
			w, err := create(dir, now, write)
			require.Nil(t, w)
			require.ErrorIs(t, err, full)
			require.ErrorContains(t, err, filepath.Join(dir, "events.out.tfevents.1700000001."))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "only the earlier file stays")
			require.Equal(t, filepath.Base(earlier), entries[0].Name())
		})
	}
}

// TestWriteNamesNoTemporaryEventFile: TensorBoard reads every file of a
// run whose name holds "tfevents", a temporary one too, so WriteFile and
// Truncate write theirs under a name without it: one seen while it is
// written, or left for good by a process killed then (spiral tensorboard
// stops at Ctrl-C at once), would show its steps twice
// (".events.out.tfevents.<sec>.<host>.spiral.tmp-N" did).
func TestWriteNamesNoTemporaryEventFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tb")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	events := make([]Event, 400_000)
	for i := range events {
		events[i] = Event{Wall: float64(i), Step: int64(i + 1), Scalars: []Scalar{{"search/reward", 0.5}, {"loss", 0.25}}}
	}
	seen := map[string]bool{}
	watch := func(write func() error) {
		done := make(chan error)
		go func() { done <- write() }()
		for {
			select {
			case err := <-done:
				require.NoError(t, err)
				return
			default:
			}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range entries {
				seen[e.Name()] = true
			}
		}
	}
	var p string
	watch(func() (err error) { p, err = WriteFile(dir, time.Unix(1700000000, 0), events); return err })
	watch(func() error { _, err := Truncate(p, 300_000); return err })
	require.Greater(t, len(seen), 1, "the writes' temporary files were seen")
	for name := range seen {
		if name != filepath.Base(p) {
			require.NotContains(t, name, "tfevents", "a file TensorBoard would read besides %s", filepath.Base(p))
		}
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
}

// TestNewFileSortsLast: a new event file is named after every event file
// in its directory, spiral's or another writer's, whatever the clock
// says: one named for a clock behind theirs (a run resumed on another
// machine, a clock stepped back) sorted first, and TensorBoard's default
// loader, reading the files in name order, dropped the resumed steps
// when the earlier steps of the older file came after them.
func TestNewFileSortsLast(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	name := func(sec string) string { return "events.out.tfevents." + sec + "." + host + ".spiral" }
	for _, tc := range []struct {
		existing []string
		now      int64
		want     []string // Create's, then WriteFile's
	}{
		{nil, 1700000000, []string{name("1700000000"), name("1700000001")}},
		{[]string{name("1700000500")}, 1700000000, []string{name("1700000501"), name("1700000502")}},
		{[]string{name("1700000500"), "events.out.tfevents.1700000900.other.4242.0.v2", "events.out.tfevents.junk", "notes.txt"}, 1700000000,
			[]string{name("1700000901"), name("1700000902")}},
		{[]string{name("1600000000")}, 1700000000, []string{name("1700000000"), name("1700000001")}},
	} {
		dir := filepath.Join(t.TempDir(), "tb")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for _, n := range tc.existing {
			require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
		}
		w, err := Create(dir, time.Unix(tc.now, 0))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		p, err := WriteFile(dir, time.Unix(tc.now, 0), nil)
		require.NoError(t, err)
		require.Equal(t, []string{filepath.Join(dir, tc.want[0]), filepath.Join(dir, tc.want[1])}, []string{w.Path(), p}, "%v", tc.existing)
		files, err := Files(dir)
		require.NoError(t, err)
		require.Equal(t, []string{w.Path(), p}, files[len(files)-2:], "%v", tc.existing)
	}
}

// TestWriteFileReplaces: the files WriteFile replaces are gone before the
// new file is written (a process killed in between leaves neither), and
// it is named after them still, as after any file that is there.
func TestWriteFileReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tb")
	old, err := WriteFile(dir, time.Unix(1700000500, 0), nil)
	require.NoError(t, err)
	p, err := WriteFile(dir, time.Unix(1700000000, 0), []Event{{Step: 1, Scalars: []Scalar{{Tag: "loss", Value: 1}}}}, old)
	require.NoError(t, err)
	require.Greater(t, filepath.Base(p), filepath.Base(old))
	files, err := Files(dir)
	require.NoError(t, err)
	require.Equal(t, []string{p}, files)
	_, err = WriteFile(dir, time.Unix(1700000000, 0), nil, old)
	require.ErrorContains(t, err, "tfevents: remove "+old+", which ")
	files, err = Files(dir)
	require.NoError(t, err)
	require.Equal(t, []string{p}, files, "nothing written when a replaced file cannot be removed")
}

// TestNewFileRemovesKilledWritesLeftovers: the temporary files that a
// write of an event file killed within it leaves (writeFile's, named
// .events.spiral.tmp-N; before it, a staging file
// .<sec>.<host>.spiral.partial and its own temporary file
// ..<sec>.<host>.spiral.partial.tmp-N, named for the second, which no
// later write matched) are removed by the next event file started in
// the directory, live (Create) or written whole (WriteFile), once a
// minute old and unlocked (atomicfile.RemoveAbandoned); they stayed for
// good. Files of other names stay.
func TestNewFileRemovesKilledWritesLeftovers(t *testing.T) {
	leftovers := []string{".events.spiral.tmp-123", ".1700000000.host.spiral.partial", "..1700000000.host.spiral.partial.tmp-456"}
	others := []string{".events.spiral.tmp-", ".events.spiral.tmp-1x", ".notes.spiral.partial", "..x.host.spiral.partial.tmp-4", "notes.txt"}
	for _, start := range []struct {
		name string
		new  func(dir string) (string, error)
	}{
		{"Create", func(dir string) (string, error) {
			w, err := Create(dir, time.Unix(1700000001, 0))
			if err != nil {
				return "", err
			}
			return w.Path(), w.Close()
		}},
		{"WriteFile", func(dir string) (string, error) { return WriteFile(dir, time.Unix(1700000001, 0), nil) }},
	} {
		t.Run(start.name, func(t *testing.T) {
			dir := t.TempDir()
			old := time.Now().Add(-2 * time.Minute)
			for _, n := range append(slices.Clone(leftovers), others...) {
				p := filepath.Join(dir, n)
				require.NoError(t, os.WriteFile(p, []byte("partial"), 0o666))
				require.NoError(t, os.Chtimes(p, old, old))
			}
			p, err := start.new(dir)
			require.NoError(t, err)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			want := append(slices.Clone(others), filepath.Base(p))
			require.ElementsMatch(t, want, names)
		})
	}
}
