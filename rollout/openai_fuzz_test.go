package rollout

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

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

// FuzzRetryAfter feeds arbitrary Retry-After headers to retryAfter: the
// wait is never negative, a number of seconds is that many seconds, and
// an HTTP date is the time until it.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, h := range []string{"", "0", "1", " 120 ", "4294967295", "4294967296", "-1", "1.5", "soon",
		"Sun, 06 Dec 2026 12:00:30 GMT", "Sunday, 06-Dec-26 12:01:00 GMT", "Sun Dec  6 12:00:10 2026",
		"Sat, 05 Dec 2026 12:00:00 GMT"} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		d := retryAfter(h, now)
		require.GreaterOrEqual(t, d, time.Duration(0))
		if s, err := strconv.ParseUint(strings.TrimSpace(h), 10, 32); err == nil {
			require.Equal(t, time.Duration(s)*time.Second, d)
		} else if at, err := http.ParseTime(strings.TrimSpace(h)); err == nil && at.After(now) {
			require.Equal(t, at.Sub(now), d)
		}
	})
}

// FuzzErrorAnswer feeds arbitrary 2xx bodies to errorAnswer: one it takes
// for an error has a message on one line.
func FuzzErrorAnswer(f *testing.F) {
	f.Add([]byte(`{"object":"error","message":"The model does not exist.","type":"NotFoundError","param":null,"code":404}`), false)
	f.Add([]byte(`{"error":{"message":"prompt is too long","type":"BadRequestError"}}`), false)
	f.Add([]byte(`{"error":"no such adapter"}`), true)
	f.Add([]byte(`{"success":false,"message":"adapter busy"}`), true)
	f.Add([]byte(`{"success":true}`), true)
	f.Add([]byte(`Success: LoRA adapter 'a' added successfully.`), true)
	f.Add([]byte(`{"id":"cmpl-1","object":"text_completion","choices":[{"text":"4","token_ids":[19]}]}`), false)
	f.Fuzz(func(t *testing.T, raw []byte, success bool) {
		msg, ok := errorAnswer(raw, success)
		if !ok {
			require.Empty(t, msg)
			return
		}
		require.NotEmpty(t, msg)
	})
}

// roundTrip answers every request with one fixed response.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzComplete feeds arbitrary answers of /completions (status, body,
// Retry-After) to one request: a completion it accepts has at most
// max_tokens tokens, all within the vocabulary, a finish reason of stop or
// length, and engine log-probabilities (when kept) one per token, finite
// and at most maxLogProb; an error names the server.
func FuzzComplete(f *testing.F) {
	f.Add(200, []byte(`{"choices":[{"text":" 4","token_ids":[19,2],"prompt_token_ids":[5,6,7],"finish_reason":"stop","logprobs":{"token_logprobs":[-0.5,-0.01]}}]}`), "", false)
	f.Add(200, []byte(`{"choices":[{"text":" 4 5 6 7","token_ids":[19,20,21,22],"finish_reason":"length"}]}`), "", false)
	f.Add(200, []byte(`{"choices":[{"text":"abc","finish_reason":null}]}`), "", true)
	f.Add(200, []byte(`{"choices":[{"text":"abc","finish_reason":"stop"}]}`), "", true)
	f.Add(200, []byte(`{"choices":[{"token_ids":[19,2],"finish_reason":null,"logprobs":{"token_logprobs":[null,0.5]}}]}`), "", false)
	f.Add(200, []byte(`{"choices":[]}`), "", false)
	f.Add(200, []byte(`{"object":"error","message":"bad"}`), "", false)
	f.Add(400, []byte(`{"object":"error","message":"This model's maximum context length is 4096 tokens."}`), "", false)
	f.Add(429, []byte(`{"error":{"message":"rate limited"}}`), "3", false)
	f.Add(502, []byte(`<html><head><title>502 Bad Gateway</title></head></html>`), "", false)
	f.Fuzz(func(t *testing.T, status int, body []byte, retry string, tokenize bool) {
		if status < 100 || status > 999 {
			status = 200
		}
		const base = "http://engine.invalid/v1"
		cfg := OpenAIConfig{
			BaseURL: base, Model: "m", Vocab: 100, Retries: -1, Timeout: time.Minute,
			Sampling: SamplerConfig{Temperature: 1, TopP: 1, MaxNewTokens: 4, StopIDs: []int32{2, 3}},
			Client: &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
				h := http.Header{"Content-Type": {"application/json"}}
				if retry != "" {
					h.Set("Retry-After", retry)
				}
				return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
			})},
		}
		if tokenize {
			cfg.Tokenize = func(text string) ([]int32, error) {
				ids := make([]int32, 0, len(text))
				for _, b := range []byte(text) {
					ids = append(ids, int32(b)%100)
				}
				return ids, nil
			}
		}
		o, err := NewOpenAI(cfg)
		require.NoError(t, err)
		c, err := o.complete(context.Background(), Request{Prompt: []int32{5, 6, 7}})
		if err != nil {
			require.Contains(t, err.Error(), base)
			return
		}
		require.LessOrEqual(t, len(c.Tokens), cfg.Sampling.MaxNewTokens)
		for _, id := range c.Tokens {
			require.True(t, id >= 0 && id < 100, "token %d", id)
		}
		require.Contains(t, []FinishReason{FinishStop, FinishLength}, c.Finish)
		require.Equal(t, 3, c.PromptTokens)
		if c.EngineLogProbs != nil {
			require.Len(t, c.EngineLogProbs, len(c.Tokens))
			for _, lp := range c.EngineLogProbs {
				require.False(t, math.IsNaN(float64(lp)) || math.IsInf(float64(lp), 0))
				require.LessOrEqual(t, float64(lp), maxLogProb)
			}
		}
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
		require.NotEmpty(t, req.URL.Hostname(), "base URL %q", s)
		require.Equal(t, u.Hostname(), req.URL.Hostname(), "base URL %q", s)
		require.Equal(t, u.Port(), req.URL.Port(), "base URL %q", s)
		require.True(t, strings.HasSuffix(req.URL.Path, "/completions"), "base URL %q: POST %s goes to path %q", s, base+"/completions", req.URL.Path)
		require.Empty(t, req.URL.RawQuery)
		require.Empty(t, req.URL.Fragment)
	})
}
