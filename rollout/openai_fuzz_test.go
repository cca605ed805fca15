package rollout

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzBodySummary feeds arbitrary error bodies to bodySummary: the summary
// is one line, never empty, and quotes at most maxErrorBody bytes of the
// body, or of an HTML page's title, which the body holds.
func FuzzBodySummary(f *testing.F) {
	f.Add([]byte(`{"object":"error","message":"model not found","type":"NotFoundError","code":404}`), "application/json")
	f.Add([]byte("<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"), "text/html; charset=utf-8")
	f.Add([]byte("<html><title>  </title></html>"), "")
	f.Add([]byte("Internal Server Error"), "text/plain")
	f.Add([]byte(strings.Repeat("é", 400)), "text/plain")
	f.Add([]byte(""), "")
	f.Add([]byte("<HTML><TITLE>K\u212a</TITLE></HTML>"), "text/html")
	f.Fuzz(func(t *testing.T, raw []byte, contentType string) {
		s := bodySummary(raw, contentType)
		require.NotEmpty(t, s)
		require.NotContains(t, s, "\n")
		if rest, ok := strings.CutPrefix(s, "an HTML page titled "); ok {
			quoted, err := strconv.QuotedPrefix(rest)
			require.NoError(t, err)
			title, err := strconv.Unquote(quoted)
			require.NoError(t, err)
			title = strings.TrimSuffix(title, "...")
			require.LessOrEqual(t, len(title), maxErrorBody, "summary %q", s)
			require.Contains(t, strings.Join(strings.Fields(string(raw)), " "), title, "summary %q", s)
			return
		}
		quoted, _, cut := strings.Cut(s, "... (")
		if !cut {
			quoted = s
		}
		require.LessOrEqual(t, len(quoted), maxErrorBody, "summary %q", s)
	})
}
