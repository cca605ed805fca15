package rollout

import (
	"net/http"
	"net/url"
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

// FuzzCheckBaseURL feeds arbitrary --base-url values to CheckBaseURL: a
// URL it accepts is an http or https URL with a host and no user, to
// which the API's paths append (POST BASE/completions goes to a path
// ending in /completions, on the same host).
func FuzzCheckBaseURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:8000/v1", "https://api.example.com/v1/", "http://localhost:30000", "127.0.0.1:8000/v1",
		"http://user:pw@host/v1", "ftp://host/v1", "http:///v1", "http://host/v1?x=1", "http://host/v1?", "http://host/v1#", "http://host/v1#frag",
		"http://[::1]:8000/v1", "http://host/v%2F1", "http://host:port/v1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckBaseURL(s) != nil {
			return
		}
		base := strings.TrimSuffix(s, "/")
		req, err := http.NewRequest(http.MethodPost, base+"/completions", nil)
		require.NoError(t, err, "base URL %q", s)
		u, err := url.Parse(s)
		require.NoError(t, err)
		require.Contains(t, []string{"http", "https"}, req.URL.Scheme)
		require.Equal(t, u.Host, req.URL.Host, "base URL %q", s)
		require.True(t, strings.HasSuffix(req.URL.Path, "/completions"), "base URL %q: POST %s goes to path %q", s, base+"/completions", req.URL.Path)
		require.Empty(t, req.URL.RawQuery)
		require.Empty(t, req.URL.Fragment)
	})
}
