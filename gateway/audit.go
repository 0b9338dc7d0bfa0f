package gateway

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// auditEvent is one line of the audit log. It never holds a credential:
// CredentialID is a fingerprint (a certificate's SHA-256, a token's JTI).
type auditEvent struct {
	Time          time.Time `json:"time"`
	RequestID     string    `json:"requestID"`
	User          string    `json:"user,omitempty"`
	UID           string    `json:"uid,omitempty"`
	Groups        []string  `json:"groups,omitempty"`
	Authenticator string    `json:"authenticator,omitempty"`
	CredentialID  string    `json:"credentialID,omitempty"`
	// CertSerial is the serial number of an x509 user's certificate, in
	// hexadecimal as openssl x509 -serial prints it.
	CertSerial     string  `json:"certSerial,omitempty"`
	Method         string  `json:"method"`
	Path           string  `json:"path"`
	Status         int     `json:"status"`
	UpstreamStatus int     `json:"upstreamStatus,omitempty"`
	LatencySeconds float64 `json:"latencySeconds"`
	Error          string  `json:"error,omitempty"`

	// ClientRequestID is the X-Request-Id the client sent, if any: the
	// client's claim, never the request's identity, which is RequestID,
	// always the gateway's own.
	ClientRequestID string `json:"clientRequestID,omitempty"`
}

// auditLog writes one JSON line per request through a buffer that is
// flushed at least once a second, so that the log costs no system call
// per request.
type auditLog struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func newAuditLog(w io.Writer) *auditLog {
	return &auditLog{w: bufio.NewWriterSize(w, 64<<10)}
}

func (a *auditLog) write(ev *auditEvent) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	a.mu.Lock()
	_, _ = a.w.Write(b)
	_ = a.w.WriteByte('\n')
	a.mu.Unlock()
}

// flush writes out buffered lines.
func (a *auditLog) flush() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.w.Flush()
}
