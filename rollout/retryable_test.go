package rollout

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRetryable: which failures another attempt may mend. A host name
// that does not resolve (a mistyped --base-url) fails at once, where it
// was retried as a server still starting, up to --engine-timeout (10
// minutes by default) for the model check, as do a TLS certificate that
// does not verify and an http server at an https URL; a refused
// connection, a resolver that could not answer, a 429 or a 5xx are
// retried.
func TestRetryable(t *testing.T) {
	conn := func(err error) error {
		return &connError{fmt.Errorf("rollout: engine: http://h/v1/models is not reachable: %w", err)}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"429", &statusError{status: 429}, true},
		{"503", &statusError{status: 503}, true},
		{"404", &statusError{status: 404}, false},
		{"connection refused", conn(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{"no such host", conn(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "vlm", IsNotFound: true}}), false},
		{"resolver timed out", conn(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "i/o timeout", Name: "vllm", IsTimeout: true}}), true},
		{"cancelled", conn(context.Canceled), false},
		{"certificate not verified", conn(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), false},
		{"not TLS", conn(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), false},
		{"http server at an https URL", conn(http.ErrSchemeMismatch), false},
		{"other", errors.New("unexpected JSON"), false},
	} {
		require.Equal(t, tc.want, retryable(tc.err), tc.name)
	}
}
