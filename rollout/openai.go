package rollout

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spiral-rl/spiral/model/jsonerr"
)

// OpenAIConfig configures OpenAI, a Generator that sends every request to
// a serving engine's OpenAI-compatible completions endpoint (vLLM,
// SGLang). Prompts go as token ids (rendered and tokenized by spiral, so
// the exact tokens are known), and the completion's token ids are asked
// back (vLLM's return_token_ids); a server that does not return them has
// the text tokenized locally by Tokenize, with one warning.
type OpenAIConfig struct {
	// BaseURL is the API root, e.g. http://127.0.0.1:8000/v1.
	BaseURL string
	// Model is the served model name (the request's "model").
	Model string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Sampling holds the temperature, top-p, top-k, MaxNewTokens and
	// StopIDs sent with each request, max_tokens within what
	// ContextLength leaves after the prompt (the rest is the engine's
	// business).
	Sampling SamplerConfig
	// Concurrency bounds the requests in flight; default 16.
	Concurrency int
	// Retries is how many times a request is retried after a 429, a 5xx,
	// a completion the engine aborted (finish_reason "abort") or a
	// connection error (nothing else: another answer would be the
	// same), waiting Backoff, then twice as long each time, or longer
	// when the answer's Retry-After asks so; defaults 4 and 500 ms. Each
	// retry is announced on Warn with its reason (see RetryNotice).
	Retries int
	Backoff time.Duration
	// Timeout bounds one request from its first attempt to its answer,
	// retries and the waits between them included; default 10 minutes
	// (0), negative is an error.
	Timeout time.Duration
	// Vocab, when > 0, is the size of the model's vocabulary: a
	// completion holding a token id outside [0, Vocab) is an error.
	Vocab int
	// PolicyVocab, when > 0 (and below Vocab), is the policy's: the
	// tokenizer's ids, which the learner's softmax is over
	// (model.ExecutorOptions.VocabLimit). An engine samples from every
	// logit, so a completion may hold an id in [PolicyVocab, Vocab), one
	// of the model's padding logits, which the policy gives probability
	// 0: it is cut before that id (Finish FinishPadding, judged as at the
	// token limit), with a warning the first time, rather than failing a
	// run for a sample of probability near 0.
	PolicyVocab int
	// SyncDir, when set, is the directory a weight sync that loads full
	// weights from disk (SGLangDiskSync.Dir) exports its versions into:
	// SGLang names its model after the directory it loaded last, so a
	// server listing one of them (a version an earlier run synced) is
	// taken by CheckModel as serving Model, with a note on Warn, for a
	// run that loads its own weights before its first request.
	SyncDir string
	// ModelContext, when > 0, is the context the model states
	// (config.json's max_position_embeddings): what an SGLang that lists
	// no max_model_len serves without a --context-length (see
	// CheckModel).
	ModelContext int
	// Tokenize turns a completion's text into ids when the server sends
	// none; nil makes such a server an error.
	Tokenize func(text string) ([]int32, error)
	// Warn receives the fallback warning, a line per retry, and a line
	// when the model check (the first request) has had no answer for
	// WaitNotice (default 10 s); nil discards them.
	Warn       io.Writer
	WaitNotice time.Duration
	// StallNotice: when no request of a Generate call has answered for
	// this long (default 1 minute), a line on Warn says so, and again
	// each time the wait doubles, so that a server that stopped
	// answering is not waited on silently until Timeout.
	StallNotice time.Duration
	// RetryNotice is the least time between two retry lines on Warn: the
	// retries in between, of any request, are counted in the next line
	// instead, so that an engine restarting under Concurrency requests
	// does not print a line for each of their retries; default 10 s (0),
	// negative: a line for every retry.
	RetryNotice time.Duration
	// Client is the HTTP client; nil uses a new one that keeps a
	// connection per request in flight (Concurrency) between requests.
	Client *http.Client
}

// Defaults of OpenAIConfig.
const (
	DefaultEngineConcurrency = 16
	DefaultEngineRetries     = 4
	DefaultEngineBackoff     = 500 * time.Millisecond
	DefaultEngineTimeout     = 10 * time.Minute
	DefaultEngineWaitNotice  = 10 * time.Second
	DefaultEngineStallNotice = time.Minute
	DefaultEngineRetryNotice = 10 * time.Second
)

// OpenAI is the serving-engine Generator (see OpenAIConfig).
type OpenAI struct {
	cfg      OpenAIConfig
	warnOnce sync.Once
	// badLogProbs warns once of log-probabilities left out.
	badLogProbs sync.Once
	// pastPolicy warns once of a completion cut before an id past
	// PolicyVocab.
	pastPolicy sync.Once
	warnMu     sync.Mutex // serializes the lines written to cfg.Warn
	// lastRetry is when the last retry line was written and
	// quietRetries how many retries were not announced since (warnMu).
	lastRetry    time.Time
	quietRetries int
	mu           sync.Mutex
	model        string // the name requests go to (a synced adapter's, once set)
}

// CheckBaseURL checks an engine's API root: an http or https URL with a
// host, no query and no fragment (paths are appended to it).
func CheckBaseURL(s string) error {
	if !strings.Contains(s, "://") {
		return fmt.Errorf("%q: want an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%q does not parse as a URL: %w", s, err)
	}
	if u.User != nil {
		// Errors, retry warnings and eval reports name the URL: a
		// password in it would be written everywhere (this message
		// included, were it quoted).
		return fmt.Errorf("%s names a user (and password): give the API key with --api-key-env instead, which the URL, printed in errors and reports, does not carry", u.Redacted())
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: want an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1", s)
	}
	if u.Hostname() == "" { // "http://:8000/v1" too, which Go would send to this machine
		return fmt.Errorf("%q names no host", s)
	}
	// An empty fragment ("/v1#") leaves u.Fragment empty: the "#" alone
	// would turn every path appended into a fragment.
	if u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "#") {
		return fmt.Errorf("%q: want the API root, without a query or fragment", s)
	}
	return nil
}

// CheckAPIKey checks that an API key can be sent as a bearer token: an
// HTTP header holds no control character but a tab (Go refuses a request
// with one before sending it, an error that reads as a server not
// reachable). The byte is named by its position, never the key by its
// text.
func CheckAPIKey(key string) error {
	for i := 0; i < len(key); i++ {
		b := key[i]
		if b >= 0x20 && b != 0x7f || b == '\t' {
			continue
		}
		what, hint := fmt.Sprintf("the control character %#02x", b), ""
		switch b {
		case '\r':
			what, hint = "a carriage return", " (a line ending read with it?)"
		case '\n':
			what, hint = "a line feed", " (a line ending read with it?)"
		}
		return fmt.Errorf("the API key holds %s (byte %d of %d), which an HTTP header cannot carry%s", what, i+1, len(key), hint)
	}
	return nil
}

// NewOpenAI checks cfg and fills its defaults.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.BaseURL == "" || cfg.Model == "" {
		return nil, errors.New("rollout: engine: the base URL and the served model name are required")
	}
	if err := CheckBaseURL(cfg.BaseURL); err != nil {
		return nil, fmt.Errorf("rollout: engine: base URL %w", err)
	}
	if err := CheckAPIKey(cfg.APIKey); err != nil {
		return nil, fmt.Errorf("rollout: engine: %w", err)
	}
	if cfg.Sampling.MaxNewTokens <= 0 {
		return nil, fmt.Errorf("rollout: engine: max new tokens %d: want > 0", cfg.Sampling.MaxNewTokens)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("rollout: engine: timeout %v: want > 0 (0 = the default, %v)", cfg.Timeout, DefaultEngineTimeout)
	}
	if cfg.Vocab < 0 {
		return nil, fmt.Errorf("rollout: engine: vocabulary size %d: want >= 0 (0 = unchecked)", cfg.Vocab)
	}
	if cfg.PolicyVocab < 0 || cfg.Vocab > 0 && cfg.PolicyVocab > cfg.Vocab {
		return nil, fmt.Errorf("rollout: engine: policy vocabulary %d: want 0 (none) to the vocabulary size %d", cfg.PolicyVocab, cfg.Vocab)
	}
	cfg.BaseURL = strings.TrimSuffix(cfg.BaseURL, "/")
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultEngineConcurrency
	}
	if cfg.Retries < 0 {
		cfg.Retries = 0
	} else if cfg.Retries == 0 {
		cfg.Retries = DefaultEngineRetries
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultEngineBackoff
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultEngineTimeout
	}
	if cfg.WaitNotice <= 0 {
		cfg.WaitNotice = DefaultEngineWaitNotice
	}
	if cfg.StallNotice <= 0 {
		cfg.StallNotice = DefaultEngineStallNotice
	}
	if cfg.RetryNotice == 0 {
		cfg.RetryNotice = DefaultEngineRetryNotice
	}
	if cfg.Client == nil {
		// Keep a connection per request in flight between batches (the
		// default transport keeps 2 a host: the others were closed after
		// each answer and opened again for the next request).
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = cfg.Concurrency
		tr.MaxIdleConns = max(tr.MaxIdleConns, cfg.Concurrency)
		cfg.Client = &http.Client{Transport: tr}
	}
	if cfg.Client.CheckRedirect == nil {
		c := *cfg.Client
		c.CheckRedirect = checkRedirect
		cfg.Client = &c
	}
	return &OpenAI{cfg: cfg, model: cfg.Model}, nil
}

// Model returns the model name requests are sent to.
func (o *OpenAI) Model() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.model
}

// SetModel sends later requests to the model called name (a LoRA adapter
// the server has just loaded).
func (o *OpenAI) SetModel(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.model = name
}

// BaseURL returns the API root.
func (o *OpenAI) BaseURL() string { return o.cfg.BaseURL }

// CloseIdleConnections closes the client's connections to the server
// that no request is using: those an engine made for a check alone
// (CheckModel) would otherwise stay open, idle, beside the generator's.
func (o *OpenAI) CloseIdleConnections() { o.cfg.Client.CloseIdleConnections() }

// completionRequest is the body of POST /completions, with the vLLM and
// SGLang extensions spiral needs (top_k, min_p, repetition_penalty,
// stop_token_ids, return_token_ids, skip_special_tokens); servers ignore
// what they do not know. Every sampling parameter is sent, those that
// are off too, as the local sampler applies them: vLLM (from 0.8, with
// its default --generation-config auto) fills one a request leaves out
// from the model's generation_config.json (Qwen3's top_k 20,
// Qwen2.5-Instruct's repetition_penalty 1.05), llama.cpp's server from
// its own defaults (top_k 40, min_p 0.05).
type completionRequest struct {
	Model       string  `json:"model"`
	Prompt      []int32 `json:"prompt"`
	MaxTokens   int     `json:"max_tokens"`
	Temperature float64 `json:"temperature"`
	TopP        float64 `json:"top_p"`
	// TopK -1 is off (vLLM takes 0 too, older vLLM and SGLang only -1).
	TopK              int     `json:"top_k"`
	MinP              float64 `json:"min_p"`
	RepetitionPenalty float64 `json:"repetition_penalty"`
	Seed              int64   `json:"seed"`
	N                 int     `json:"n"`
	StopTokenIDs      []int32 `json:"stop_token_ids,omitempty"`
	ReturnTokenIDs    bool    `json:"return_token_ids"`
	// Logprobs 0 asks for the sampled tokens' log-probabilities only.
	Logprobs          int  `json:"logprobs"`
	SkipSpecialTokens bool `json:"skip_special_tokens"`
}

type completionResponse struct {
	Choices []completionChoice `json:"choices"`
}

// completionChoice is a choice of a completionResponse.
type completionChoice struct {
	// Text is nil when the answer has none (null or missing).
	Text     *string `json:"text"`
	TokenIDs []int32 `json:"token_ids"`
	// PromptTokenIDs is the prompt the engine completed, which vLLM
	// returns with return_token_ids.
	PromptTokenIDs []int32 `json:"prompt_token_ids"`
	FinishReason   string  `json:"finish_reason"`
	Logprobs       *struct {
		TokenLogprobs []*float64 `json:"token_logprobs"`
	} `json:"logprobs"`
}

// errorMessage is the message of an error answer's JSON body, in the
// shapes OpenAI-compatible servers give it: {"error": {"message": ...}}
// (OpenAI, SGLang), {"error": "..."} (vLLM's and SGLang's API-key
// check) or {"message": ...} (vLLM); "" for any other body.
func errorMessage(raw []byte) string {
	var a struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(a.Error, &e) == nil && e.Message != "" {
		return e.Message
	}
	for _, m := range []json.RawMessage{a.Error, a.Message} {
		var s string
		if json.Unmarshal(m, &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// statusError is a non-2xx answer; retryAfter is how long its
// Retry-After header asks to wait before another attempt (0: none).
type statusError struct {
	url        string
	status     int
	message    string
	retryAfter time.Duration
}

func (e *statusError) Error() string {
	return fmt.Sprintf("rollout: engine: %s: HTTP %d: %s", e.url, e.status, e.message)
}

// connError is a request that got no complete answer: the server could
// not be reached, or the connection broke.
type connError struct{ err error }

func (e *connError) Error() string { return e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// abortedError is a completion the engine answered aborted
// (finish_reason "abort"): vLLM answers it for a request aborted by its
// client or by a pause for a weight update (pause_generation's default
// mode), SGLang for one aborted by /abort_request or such a pause, and
// both hold the requests that arrive during the pause until it ends. A
// request SGLang aborts for itself (one it refuses, one it has no memory
// for) is answered a 4xx or 5xx instead. So another attempt of the same
// request is answered, as after a 5xx.
type abortedError struct{ url string }

func (e *abortedError) Error() string {
	return fmt.Sprintf("rollout: engine: %s: the engine aborted the completion (finish_reason \"abort\"), as it does a request aborted from outside it (a pause for a weight update, SGLang's /abort_request)", e.url)
}

// aborted reports whether the engine aborted a choice of the answer
// (abortedError).
func (r *completionResponse) aborted() bool {
	return slices.ContainsFunc(r.Choices, func(c completionChoice) bool { return c.FinishReason == "abort" })
}

// retryable reports whether another attempt may succeed where err
// failed: a 429, a 5xx, a completion the engine aborted (abortedError)
// or a connection error. Anything else (a 4xx, an
// answer that is not the expected JSON, a host name that does not
// resolve, as a mistyped --base-url's, a TLS certificate that does not
// verify, an http server at an https URL) would fail again.
func retryable(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.status == http.StatusTooManyRequests || se.status >= 500
	}
	var ae *abortedError
	if errors.As(err, &ae) {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return false
	}
	// A server whose TLS certificate does not verify, or that answers an
	// https URL in plain HTTP, answers every attempt alike.
	var cert *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	if errors.As(err, &cert) || errors.As(err, &record) || errors.Is(err, http.ErrSchemeMismatch) {
		return false
	}
	var ce *connError
	return errors.As(err, &ce) && !errors.Is(err, context.Canceled)
}

// redirectError is a redirect that would change the request's method:
// a POST answered 301, 302 or 303, which an HTTP client follows with a
// GET without the body, so that the server answers something else
// (typically a 404 or 405) for a request that never reached it.
type redirectError struct {
	status   int
	method   string
	location string
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("answered HTTP %d, a redirect to %s, which would send the %s again as a GET without its body; set --base-url to the address the server redirects to", e.status, e.location, e.method)
}

// checkRedirect is the client's redirect policy: follow those that keep
// the method (a GET's, 307, 308), at most 10, and refuse the others
// (redirectError).
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if prev := via[len(via)-1]; req.Method != prev.Method {
		status := 0
		if req.Response != nil {
			status = req.Response.StatusCode
		}
		return &redirectError{status: status, method: prev.Method, location: req.URL.String()}
	}
	return nil
}

// errTimeout is the cause of a request's context when its Timeout runs
// out (as against the caller's context ending).
var errTimeout = errors.New("rollout: engine: request timeout")

// post sends body to path (under BaseURL) and decodes the answer into
// out (nil: the answer is not read), with retries (see request).
func (o *OpenAI) post(ctx context.Context, method, path string, body, out any) error {
	return o.request(ctx, method, o.cfg.BaseURL+path, body, out)
}

// request sends body to url and decodes the answer into out, retrying
// what retryable allows up to Retries times with backoff, each retry
// announced on Warn; Timeout bounds the whole, retries and waits
// included.
func (o *OpenAI) request(ctx context.Context, method, url string, body, out any) error {
	return o.send(ctx, method, url, body, out, o.cfg.Retries)
}

// untilTimeout, as send's retries, retries until Timeout runs out: a
// server still starting (loading its model) refuses connections or
// answers 503 for minutes.
const untilTimeout = -1

// maxStartWait is the longest wait between two attempts of a request
// retried untilTimeout, so that a server that comes up is found soon.
const maxStartWait = 5 * time.Second

// send is request with retries attempts after the first (untilTimeout:
// as many as Timeout leaves time for).
func (o *OpenAI) send(ctx context.Context, method, url string, body, out any, retries int) error {
	deadline := time.Now().Add(o.cfg.Timeout)
	ctx, cancel := context.WithDeadlineCause(ctx, deadline, errTimeout)
	defer cancel()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return fmt.Errorf("rollout: engine: %s: encode the request: %w", url, err)
		}
	}
	wait := o.cfg.Backoff
	var last error // the previous attempt's error
	for attempt := 1; ; attempt++ {
		err := o.call(ctx, method, url, b, out)
		if err == nil {
			return nil
		}
		if context.Cause(ctx) == errTimeout {
			return o.timeoutError(url, attempt, last)
		}
		if ctx.Err() != nil || !retryable(err) || retries != untilTimeout && attempt > retries {
			return attempts(err, attempt)
		}
		d, note := pause(err, wait)
		of := fmt.Sprintf(" of %d", retries)
		if retries == untilTimeout {
			// Waited out to the timeout, which then names the last failure.
			of, note = "", fmt.Sprintf("%s (waiting for the server to start, up to the %v --engine-timeout)", note, o.cfg.Timeout)
		} else if time.Until(deadline) <= d {
			why := "another would start after"
			if note != "" {
				why = fmt.Sprintf("the server's Retry-After asks to wait %v, past", d)
			}
			return fmt.Errorf("%w (%s; %s the %v timeout, --engine-timeout)", err, Plural(attempt, "attempt"), why, o.cfg.Timeout)
		}
		o.warnRetry(err, attempt, of, d, note)
		last = err
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			if context.Cause(ctx) == errTimeout {
				return o.timeoutError(url, attempt, last)
			}
			return fmt.Errorf("rollout: engine: %s: %w", url, ctx.Err())
		case <-t.C:
		}
		wait *= 2
		if retries == untilTimeout {
			wait = min(wait, maxStartWait)
		}
	}
}

// retryAfter reads a Retry-After header, seconds or an HTTP date, as the
// wait it asks for from now; 0 when there is none, it cannot be read, or
// the date is past.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.ParseUint(h, 10, 32); err == nil {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// pause is how long to wait before retrying after err: the backoff
// wait, or longer when the server's Retry-After asks so (said in note).
func pause(err error, wait time.Duration) (d time.Duration, note string) {
	var se *statusError
	if errors.As(err, &se) && se.retryAfter > wait {
		return se.retryAfter, " (the server's Retry-After)"
	}
	return wait, ""
}

// attempts notes how many attempts err ended.
func attempts(err error, n int) error {
	if n == 1 {
		return err
	}
	return fmt.Errorf("%w (after %d attempts)", err, n)
}

// timeoutError is a request whose Timeout ran out in its n-th attempt
// (or the wait before it), the previous attempt having failed with last.
func (o *OpenAI) timeoutError(url string, n int, last error) error {
	err := fmt.Errorf("rollout: engine: %s: no answer within %v (--engine-timeout)", url, o.cfg.Timeout)
	if last != nil {
		err = fmt.Errorf("%w, %d attempts; the last failure before it: %v", err, n, last)
	}
	return err
}

// warnf writes a line to Warn, one writer at a time.
func (o *OpenAI) warnf(format string, args ...any) {
	if o.cfg.Warn == nil {
		return
	}
	o.warnMu.Lock()
	defer o.warnMu.Unlock()
	fmt.Fprintf(o.cfg.Warn, format, args...)
}

// warnRetry announces a retry on Warn (the attempt-th, of says of how
// many) unless another was announced within RetryNotice; the line counts
// the retries left unannounced since the last.
func (o *OpenAI) warnRetry(err error, attempt int, of string, wait time.Duration, note string) {
	if o.cfg.Warn == nil {
		return
	}
	o.warnMu.Lock()
	defer o.warnMu.Unlock()
	now := time.Now()
	if o.cfg.RetryNotice > 0 && !o.lastRetry.IsZero() && now.Sub(o.lastRetry) < o.cfg.RetryNotice {
		o.quietRetries++
		return
	}
	var quiet string
	switch o.quietRetries {
	case 0:
	case 1:
		quiet = " (1 other retry since the last line)"
	default:
		quiet = fmt.Sprintf(" (%d other retries since the last line)", o.quietRetries)
	}
	fmt.Fprintf(o.cfg.Warn, "spiral: warning: %v; retry %d%s in %v%s%s\n", err, attempt, of, wait, note, quiet)
	o.lastRetry, o.quietRetries = now, 0
}

// call sends body (nil: none) to url once and decodes the answer into
// out (nil: the answer is not read); a completion answer with a choice
// the engine aborted is an abortedError.
func (o *OpenAI) call(ctx context.Context, method, url string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return fmt.Errorf("rollout: engine: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if o.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.cfg.APIKey)
	}
	resp, err := o.cfg.Client.Do(req)
	var re *redirectError
	if errors.As(err, &re) { // the same again: not retried
		return fmt.Errorf("rollout: engine: %s %w", url, re)
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return &connError{fmt.Errorf("rollout: engine: %s: %w (the server's TLS certificate does not verify; on Linux, SSL_CERT_FILE or SSL_CERT_DIR name the certificates to trust)", url, err)}
	}
	var record tls.RecordHeaderError
	if errors.As(err, &record) || errors.Is(err, http.ErrSchemeMismatch) {
		return &connError{fmt.Errorf("rollout: engine: %s: %w (the server does not speak TLS: an http:// --base-url?)", url, err)}
	}
	if err != nil {
		return &connError{fmt.Errorf("rollout: engine: %s is not reachable: %w", url, err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return &connError{fmt.Errorf("rollout: engine: %s: read the answer: %w", url, err)}
	}
	if resp.StatusCode/100 != 2 {
		msg := cmp.Or(messageSummary(errorMessage(raw)), bodySummary(raw, resp.Header.Get("Content-Type")))
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			// A server started with an API key (vLLM's --api-key).
			if o.cfg.APIKey == "" {
				msg += " (no API key was sent: give the environment variable that holds it with --api-key-env)"
			} else {
				msg += " (the server refused the API key of --api-key-env)"
			}
		}
		return &statusError{url: url, status: resp.StatusCode, message: msg, retryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	if msg, ok := errorAnswer(raw, out == nil); ok {
		// Servers answer some refusals with a 200 (older vLLM versions,
		// proxies): the request failed all the same, and would again.
		return fmt.Errorf("rollout: engine: %s: HTTP %d, but the answer is an error: %s", url, resp.StatusCode, msg)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("rollout: engine: %s: the answer is not the expected JSON: %s (the answer: %s)", url, jsonProblem(err), bodySummary(raw, resp.Header.Get("Content-Type")))
	}
	if c, ok := out.(*completionResponse); ok && c.aborted() {
		return &abortedError{url: url}
	}
	return nil
}

// jsonProblem says what is wrong with an answer that did not decode:
// a member of the wrong type by its path and the JSON types (instead
// of the Go type, which for an answer's anonymous structs is their
// whole declaration), or the decoder's message.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	at := "the answer"
	if te.Field != "" {
		at = te.Field
	}
	return fmt.Sprintf("%s is %s, want %s", at, te.Value, jsonerr.Type(te.Type))
}

// maxErrorBody is the most of an error answer's text an error message
// quotes.
const maxErrorBody = 300

// bodySummary is an error answer's body as an error message quotes it:
// on one line, an HTML page (a proxy's error page) by its title, and at
// most maxErrorBody bytes of it, with the body's size when cut.
func bodySummary(raw []byte, contentType string) string {
	s := strings.Join(strings.Fields(string(raw)), " ")
	if s == "" {
		return "(an empty body)"
	}
	// Lowered in ASCII only, byte for byte, so that its offsets are s's
	// (strings.ToLower changes the length of invalid UTF-8 and of some
	// letters, such as the Kelvin sign).
	lower := asciiLower(s)
	if strings.HasPrefix(contentType, "text/html") || strings.HasPrefix(lower, "<!doctype html") || strings.HasPrefix(lower, "<html") {
		if i := strings.Index(lower, "<title>"); i >= 0 {
			if j := strings.Index(lower[i:], "</title>"); j >= 0 {
				if title := strings.TrimSpace(s[i+len("<title>") : i+j]); title != "" {
					return fmt.Sprintf("an HTML page titled %q (%d bytes; not the engine's answer: a proxy's?)", shorten(title, maxErrorBody), len(raw))
				}
			}
		}
	}
	if len(s) > maxErrorBody {
		s = fmt.Sprintf("%s (%d bytes)", shorten(s, maxErrorBody), len(raw))
	}
	return s
}

// messageSummary is a server's error message as an error quotes it,
// as bodySummary quotes a body: on one line, and at most maxErrorBody
// bytes of it, with its size when cut.
func messageSummary(msg string) string {
	s := strings.Join(strings.Fields(msg), " ")
	if len(s) > maxErrorBody {
		s = fmt.Sprintf("%s (%d bytes)", shorten(s, maxErrorBody), len(msg))
	}
	return s
}

// asciiLower is s with its ASCII capitals lowered, every other byte kept.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// errorAnswer returns the message of a 2xx answer that is an error
// nonetheless: a JSON object with an "error" member (OpenAI's and
// SGLang's shape, the message in it or the member a string) or an
// "object" of "error" (vLLM's), and, with success (an answer read for its
// status only), one with "success": false. Any other answer, JSON or not
// (vLLM's adapter loads answer in plain text), is not one.
func errorAnswer(raw []byte, success bool) (string, bool) {
	var a struct {
		Object  string          `json:"object"`
		Message string          `json:"message"`
		Error   json.RawMessage `json:"error"`
		Success *bool           `json:"success"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return "", false
	}
	msg := cmp.Or(messageSummary(errorMessage(raw)), bodySummary(raw, ""))
	switch {
	case len(a.Error) > 0 && string(a.Error) != "null":
		return msg, true
	case a.Object == "error":
		return msg, true
	case success && a.Success != nil && !*a.Success:
		return msg, true
	}
	return "", false
}

// CheckModel asks the server which models it serves (GET /models) and
// fails, naming them, when Model is not one. It returns usable, the
// positions a request's prompt and max_tokens may fill together, and
// listed, the context length the server serves Model with, which may be
// below the model's (vLLM's and SGLang's max_model_len, set by their
// --max-model-len and --context-length; 0 where the list does not say,
// as llama.cpp's, whose meta.n_ctx_train is the model's). usable is
// listed, but one less on SGLang (owned_by "sglang"), which refuses a
// request that reaches its context where vLLM refuses one that passes
// it. An SGLang that lists no max_model_len (an older one) is asked for
// its context (sglangContext), noted on Warn. It is the first request,
// made as the engine and spiral are often started together: a server
// that cannot be reached (or answers a 429 or 5xx) is retried until
// Timeout, while it loads its model.
func (o *OpenAI) CheckModel(ctx context.Context) (usable, listed int, err error) {
	// A server that does not answer is announced, instead of waiting
	// silently up to Timeout.
	noticed := make(chan struct{})
	notice := time.AfterFunc(o.cfg.WaitNotice, func() {
		defer close(noticed)
		o.warnf("spiral: waiting for %s/models to answer (nothing after %v; giving up after %v, --engine-timeout)\n", o.cfg.BaseURL, o.cfg.WaitNotice, o.cfg.Timeout)
	})
	models, err := o.listModels(ctx, untilTimeout)
	if !notice.Stop() {
		<-noticed
	}
	var se *statusError
	if errors.As(err, &se) && se.status == http.StatusNotFound {
		// The usual cause: a base URL without the API's /v1.
		return 0, 0, fmt.Errorf("%w (--base-url must be the API root, under which /models and /completions lie: with vLLM and SGLang, ending in /v1)", err)
	}
	if err != nil {
		return 0, 0, err
	}
	ids := make([]string, len(models))
	for i, m := range models {
		if m.ID == o.cfg.Model {
			return o.servedContext(ctx, m)
		}
		ids[i] = m.ID
	}
	if o.cfg.SyncDir != "" {
		dir, err := filepath.Abs(o.cfg.SyncDir) // as the sync sends it
		if err != nil {
			return 0, 0, fmt.Errorf("rollout: engine: %w", err)
		}
		for _, m := range models {
			if filepath.Dir(m.ID) == dir && isVersionName(filepath.Base(m.ID)) {
				o.warnf("spiral: note: %s serves %s, a version synced into --sync-dir (SGLang names its model after the weights it loaded last), not %q: this run loads its own first\n", o.cfg.BaseURL, m.ID, o.cfg.Model)
				return o.servedContext(ctx, m)
			}
		}
	}
	if len(ids) == 0 {
		return 0, 0, fmt.Errorf("rollout: engine: %s does not serve %q (%s/models lists no model)", o.cfg.BaseURL, o.cfg.Model, o.cfg.BaseURL)
	}
	return 0, 0, fmt.Errorf("rollout: engine: %s does not serve %q (it serves %s); set --served-model", o.cfg.BaseURL, o.cfg.Model, strings.Join(ids, ", "))
}

// servedModel is a model of the server's list (GET /models).
type servedModel struct {
	ID string `json:"id"`
	// MaxModelLen is the context it is served with (vLLM, SGLang); 0
	// when not said.
	MaxModelLen int `json:"max_model_len"`
	// OwnedBy names the server ("vllm", "sglang", "llamacpp").
	OwnedBy string `json:"owned_by"`
}

// servedContext returns CheckModel's usable and listed contexts of m, a
// model the server lists: its max_model_len, or on an SGLang that lists
// none (before it did: its /v1/models of late 2024 named the model
// alone) the context it reports (sglangContext).
func (o *OpenAI) servedContext(ctx context.Context, m servedModel) (usable, listed int, err error) {
	if m.OwnedBy != "sglang" || m.MaxModelLen > 0 {
		return m.usableContext(), m.MaxModelLen, nil
	}
	none := fmt.Sprintf("%s/models lists no max_model_len for %q (an older SGLang)", o.cfg.BaseURL, m.ID)
	n, from, err := o.sglangContext(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("rollout: engine: %s, and its context could not be read: %w", none, err)
	}
	if n > 0 {
		o.warnf("spiral: note: %s: its context is %d, %s\n", none, n, from)
		m.MaxModelLen = n
	}
	return m.usableContext(), m.MaxModelLen, nil
}

// sglangContext asks an SGLang that lists no max_model_len for the
// context it serves: the context_length of /get_server_info (or, before
// it, /get_server_args), its --context-length, or where that is null,
// the model's own (ModelContext, 0 when not known), which SGLang serves
// without one, as it is taken to be where neither endpoint is there.
// from says which, for a note.
func (o *OpenAI) sglangContext(ctx context.Context) (n int, from string, err error) {
	root := strings.TrimSuffix(o.cfg.BaseURL, "/v1")
	var args struct {
		ContextLength *int `json:"context_length"`
	}
	notFound := func(err error) bool {
		var se *statusError
		return errors.As(err, &se) && se.status == http.StatusNotFound
	}
	url := root + "/get_server_info"
	err = o.request(ctx, http.MethodGet, url, nil, &args)
	if notFound(err) {
		url = root + "/get_server_args"
		err = o.request(ctx, http.MethodGet, url, nil, &args)
	}
	switch {
	case notFound(err):
		// Not an SGLang's own server (a proxy in front of one?): its
		// context is taken to be the model's, as without --context-length.
		return o.cfg.ModelContext, fmt.Sprintf("taken to be the model's (neither %s/get_server_info nor /get_server_args answers)", root), nil
	case err != nil:
		return 0, "", err
	case args.ContextLength != nil && *args.ContextLength > 0:
		return *args.ContextLength, fmt.Sprintf("the context_length of %s (--context-length)", url), nil
	}
	return o.cfg.ModelContext, fmt.Sprintf("the model's (%s says no --context-length)", url), nil
}

// usableContext is the positions a request's prompt and max_tokens may
// fill together (0: not said): MaxModelLen, but one less on SGLang,
// whose TokenizerManager refuses a request of prompt + max_new_tokens
// >= its context_len (vLLM: > max_model_len), with a 400 that fails the
// whole batch.
func (m servedModel) usableContext() int {
	if m.OwnedBy == "sglang" && m.MaxModelLen > 0 {
		return m.MaxModelLen - 1
	}
	return m.MaxModelLen
}

// listModels returns the models the server serves (GET /models): its
// base model and, on vLLM, the LoRA adapters loaded; retries as send's.
func (o *OpenAI) listModels(ctx context.Context, retries int) ([]servedModel, error) {
	var list struct {
		Data []servedModel `json:"data"`
	}
	if err := o.send(ctx, http.MethodGet, o.cfg.BaseURL+"/models", nil, &list, retries); err != nil {
		return nil, err
	}
	return list.Data, nil
}

// servedModels returns the ids of the models the server serves (see
// listModels), retried as request's.
func (o *OpenAI) servedModels(ctx context.Context) ([]string, error) {
	models, err := o.listModels(ctx, o.cfg.Retries)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(models))
	for i, m := range models {
		ids[i] = m.ID
	}
	return ids, nil
}

// Generate sends each request as one completion, at most Concurrency at
// a time, and returns the completions in request order. A request that
// fails (after its retries) fails the call, the others in flight
// cancelled; its error counts the requests answered before it, which
// are not returned. PolicyLogProbs
// stay nil: the engine's numbers are not the policy's (training
// recomputes them with its own forward pass); the engine's, when it
// returns them for the tokens it sampled, are EngineLogProbs.
func (o *OpenAI) Generate(ctx context.Context, reqs []Request, progress Progress) ([]Completion, Stats, error) {
	start := time.Now()
	out := make([]Completion, len(reqs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var firstErr error
	next := 0
	answered, left := start, len(reqs) // the last answer, and the requests still to answer
	watched := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		o.watchStalls(watched, func() (time.Time, int) {
			mu.Lock()
			defer mu.Unlock()
			return answered, left
		}, len(reqs))
	})
	defer func() { // no notice after the call returns
		close(watched)
		watcher.Wait()
	}()
	var wg sync.WaitGroup
	for range min(o.cfg.Concurrency, len(reqs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := firstErr != nil || i >= len(reqs)
				mu.Unlock()
				if stop {
					return
				}
				c, err := o.complete(ctx, reqs[i])
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("request %d: %w", i, err)
					if done := len(reqs) - left; done > 0 {
						// Lost with it: say so, a long evaluation's hours.
						firstErr = fmt.Errorf("%w (%d of the call's %d requests had been answered; a failed request fails the whole call, and their completions are not kept)", firstErr, done, len(reqs))
					}
					cancel()
				}
				if err == nil {
					out[i] = c
					answered, left = time.Now(), left-1
					if progress != nil {
						progress(len(c.Tokens))
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, Stats{}, firstErr
	}
	st := Stats{Elapsed: time.Since(start)}
	for i, c := range out {
		st.PromptTokens += len(reqs[i].Prompt)
		st.GeneratedTokens += len(c.Tokens)
	}
	return out, st, nil
}

// watchStalls writes a line to Warn when no request of a Generate call
// of n requests has answered for StallNotice, and again each time that
// wait doubles, until done is closed; state returns the time of the last
// answer (or of the call's start) and the requests still to answer.
func (o *OpenAI) watchStalls(done <-chan struct{}, state func() (time.Time, int), n int) {
	wait := o.cfg.StallNotice
	var stalled time.Time // the last answer the notices so far are about
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		last, left := state()
		if !last.Equal(stalled) {
			stalled, wait = last, o.cfg.StallNotice
		}
		if time.Since(last) >= wait {
			o.warnf("spiral: waiting for %s/completions: no answer for %v (%d of %d requests to go; each gives up after %v, --engine-timeout)\n",
				o.cfg.BaseURL, wait, left, n, o.cfg.Timeout)
			wait *= 2
		}
		t.Reset(time.Until(last.Add(wait)))
	}
}

// complete runs one request.
func (o *OpenAI) complete(ctx context.Context, r Request) (Completion, error) {
	s := o.cfg.Sampling
	if c := s.ContextLength; c > 0 {
		// As the local sampler: the completion stops where the context
		// ends (vLLM refuses a prompt and max_tokens that pass it).
		if len(r.Prompt) >= c {
			return Completion{}, fmt.Errorf("rollout: engine: prompt of %d tokens leaves no room in the model's %d-position context", len(r.Prompt), c)
		}
		s.MaxNewTokens = min(s.MaxNewTokens, c-len(r.Prompt))
	}
	topK := s.TopK
	if topK == 0 {
		topK = -1
	}
	body := completionRequest{Model: o.Model(), Prompt: r.Prompt, MaxTokens: s.MaxNewTokens, Temperature: s.Temperature,
		TopP: s.TopP, TopK: topK, RepetitionPenalty: 1, Seed: int64(r.Seed & (1<<31 - 1)), N: 1, StopTokenIDs: s.StopIDs, ReturnTokenIDs: true}
	var resp completionResponse
	if err := o.post(ctx, http.MethodPost, "/completions", body, &resp); err != nil {
		return Completion{}, err
	}
	if len(resp.Choices) != 1 {
		return Completion{}, fmt.Errorf("rollout: engine: %s/completions answered %d choices, want 1", o.cfg.BaseURL, len(resp.Choices))
	}
	ch := resp.Choices[0]
	if ch.Text == nil && ch.TokenIDs == nil {
		// A null choice or one without its completion: not an empty
		// completion, which would be trained and rewarded as one.
		return Completion{}, fmt.Errorf("rollout: engine: %s/completions answered a choice with neither text nor token_ids (both null or missing)", o.cfg.BaseURL)
	}
	text := ""
	if ch.Text != nil {
		text = *ch.Text
	}
	if ch.TokenIDs != nil && len(ch.TokenIDs) == 0 && text != "" {
		return Completion{}, fmt.Errorf("rollout: engine: %s/completions answered the text %q with no token ids (token_ids: [])", o.cfg.BaseURL, shorten(text, 80))
	}
	if ch.PromptTokenIDs != nil && !slices.Equal(ch.PromptTokenIDs, r.Prompt) {
		// A BOS the server put before the ids, a prompt it truncated: the
		// completion follows a prompt other than the one it would be
		// trained and judged on.
		i := 0
		for i < min(len(r.Prompt), len(ch.PromptTokenIDs)) && r.Prompt[i] == ch.PromptTokenIDs[i] {
			i++
		}
		at := func(ids []int32) string {
			if i < len(ids) {
				return fmt.Sprint(ids[i])
			}
			return "its end"
		}
		return Completion{}, fmt.Errorf("rollout: engine: %s/completions completed a prompt of %d tokens (prompt_token_ids) other than the %d sent: at token %d it has %s where the prompt sent has %s",
			o.cfg.BaseURL, len(ch.PromptTokenIDs), len(r.Prompt), i, at(ch.PromptTokenIDs), at(r.Prompt))
	}
	c := Completion{Tokens: ch.TokenIDs, PromptTokens: len(r.Prompt), Finish: FinishStop}
	switch ch.FinishReason {
	case "length":
		c.Finish = FinishLength
	case "stop":
	case "": // none (null): told by the tokens
		if ch.TokenIDs != nil {
			f, err := finishOf(ch.TokenIDs, s)
			if err != nil {
				return Completion{}, fmt.Errorf("rollout: engine: %s/completions answered no finish_reason, %w", o.cfg.BaseURL, err)
			}
			c.Finish = f
		}
	default:
		return Completion{}, fmt.Errorf("rollout: engine: %s/completions answered finish_reason %q: want stop or length", o.cfg.BaseURL, ch.FinishReason)
	}
	if ch.TokenIDs == nil {
		if o.cfg.Tokenize == nil {
			return Completion{}, fmt.Errorf("rollout: engine: %s returns no token_ids (vLLM's return_token_ids) and no tokenizer was given", o.cfg.BaseURL)
		}
		o.warnOnce.Do(func() {
			o.warnf("spiral: warning: %s returns completion text without token ids; tokenizing it locally, which may not give the tokens the engine sampled\n", o.cfg.BaseURL)
		})
		ids, err := o.cfg.Tokenize(text)
		if err != nil {
			return Completion{}, fmt.Errorf("rollout: engine: tokenize a completion: %w", err)
		}
		if ch.FinishReason == "" && len(ids) >= s.MaxNewTokens {
			// No reason given, and the text fills the token limit (the
			// text of a stopped completion lacks its stop token).
			c.Finish = FinishLength
		}
		// The text leaves out the stop token that ended it (token ids keep
		// it, as the local sampler does): put back the first stop id, the
		// model's end of turn, so the trace is trained and counted alike.
		if c.Finish == FinishStop && len(s.StopIDs) > 0 && (len(ids) == 0 || !slices.Contains(s.StopIDs, ids[len(ids)-1])) {
			ids = append(ids, s.StopIDs[0])
		}
		c.Tokens = ids
	}
	// vLLM answers "length" for a completion whose last token, the last
	// max_tokens allows, is a stop id (it tests the length first): the
	// model stopped there, as the local sampler, which tests the stop id
	// first, counts it, rather than being cut.
	if c.Finish == FinishLength && len(c.Tokens) >= s.MaxNewTokens && slices.Contains(s.StopIDs, c.Tokens[len(c.Tokens)-1]) {
		c.Finish = FinishStop
	}
	if v := o.cfg.Vocab; v > 0 {
		for i, id := range c.Tokens {
			if id < 0 || int(id) >= v {
				return Completion{}, fmt.Errorf("rollout: engine: %s/completions answered token id %d (completion token %d of %d), outside the model's vocabulary of %d ids [0, %d)",
					o.cfg.BaseURL, id, i, len(c.Tokens), v, v)
			}
		}
	}
	if p := o.cfg.PolicyVocab; p > 0 {
		if i := slices.IndexFunc(c.Tokens, func(id int32) bool { return int(id) >= p }); i >= 0 {
			id := c.Tokens[i]
			o.pastPolicy.Do(func() {
				o.warnf("spiral: warning: %s/completions sampled token id %d, past the tokenizer's %d ids (a padding logit of the model, which spiral's policy, the softmax over the tokenizer's ids, gives probability 0): its completion is cut before it, as at the token limit (later ones are cut without a word)\n",
					o.cfg.BaseURL, id, p)
			})
			c.Tokens, c.Finish = c.Tokens[:i], FinishPadding
		}
	}
	if lp := ch.Logprobs; ch.TokenIDs != nil && lp != nil {
		// Those of the tokens kept: a padding id cut off may have one no
		// probability has. A count other than the tokens' is told as it
		// was answered.
		lps, n := lp.TokenLogprobs, len(ch.TokenIDs)
		if len(lps) == n {
			lps, n = lps[:len(c.Tokens)], len(c.Tokens)
		}
		var bad string
		c.EngineLogProbs, bad = engineLogProbs(lps, n)
		if bad != "" {
			o.badLogProbs.Do(func() {
				o.warnf("spiral: warning: %s/completions answered %s; such completions keep no engine log-probabilities (engine_logprob_diff leaves them out)\n", o.cfg.BaseURL, bad)
			})
		}
	}
	if len(c.Tokens) > s.MaxNewTokens {
		if ch.TokenIDs == nil {
			// The engine sampled at most max_tokens, the stop token
			// included: the local tokenizer splits its text otherwise.
			with := ""
			if c.Finish == FinishStop {
				with = " (with the stop token that ended it)"
			}
			return Completion{}, fmt.Errorf("rollout: engine: tokenizing the text %s/completions answered gave %d tokens%s, over max_tokens %d, which the engine samples within: the local tokenizer splits the engine's text otherwise (does the engine serve the model given to spiral?)",
				o.cfg.BaseURL, len(c.Tokens), with, s.MaxNewTokens)
		}
		return Completion{}, fmt.Errorf("rollout: engine: %s/completions answered a completion of %d tokens, over max_tokens %d", o.cfg.BaseURL, len(c.Tokens), s.MaxNewTokens)
	}
	return c, nil
}

// maxLogProb is the largest log-probability taken from an engine: 0,
// with room for rounding.
const maxLogProb = 1e-3

// engineLogProbs returns an engine's log-probabilities of the n tokens
// it sampled as float32, or nil and what is wrong with them: another
// count, a null, or a value no probability has (positive, or not finite
// as a float32), which would make the comparison with the learner's
// meaningless, or infinite and metrics.jsonl unwritable.
func engineLogProbs(lps []*float64, n int) ([]float32, string) {
	if len(lps) != n {
		return nil, fmt.Sprintf("%d log-probabilities for %d tokens", len(lps), n)
	}
	out := make([]float32, n)
	for i, v := range lps {
		if v == nil {
			return nil, fmt.Sprintf("a null log-probability (token %d of %d)", i, n)
		}
		f := float32(*v)
		if math.IsInf(float64(f), 0) || math.IsNaN(float64(f)) || f > maxLogProb {
			return nil, fmt.Sprintf("log-probability %g (token %d of %d), which no probability has", *v, i, n)
		}
		out[i] = f
	}
	return out, ""
}

// shorten is s cut to at most n bytes (at a rune's start), with "..."
// when cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// finishOf tells why a completion of ids stopped when the server does
// not say (a null finish_reason): at a stop id it ends in, or at the
// token limit it reaches; a completion that does neither is an error
// (the reason decides whether a trace cut short earns a reward, so it is
// not guessed).
func finishOf(ids []int32, s SamplerConfig) (FinishReason, error) {
	if len(ids) > 0 && slices.Contains(s.StopIDs, ids[len(ids)-1]) {
		return FinishStop, nil
	}
	if len(ids) >= s.MaxNewTokens {
		return FinishLength, nil
	}
	return "", fmt.Errorf("and its %d tokens neither end in a stop token nor reach max_tokens %d", len(ids), s.MaxNewTokens)
}

var _ Generator = (*OpenAI)(nil)
