package gateway

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusBody returns a metav1.Status JSON body shaped like kube-apiserver's.
func statusBody(code int32, reason metav1.StatusReason, message string) []byte {
	b, err := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   reason,
		Code:     code,
	})
	if err != nil {
		panic(err) // a fixed struct always encodes
	}
	return b
}

// Bodies of the responses the gateway itself produces. 401 always says
// "Unauthorized", as kube-apiserver does; the reason is only logged.
var (
	unauthorizedBody = statusBody(http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
	// A request no upstream answered (upstreams.go, failureBody): 503
	// when none can have received it, 502 when one may have, with the
	// reason client-go gives a 502 of its own (InternalError).
	notSentBody    = statusBody(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "no upstream API server could be reached; the request was not applied")
	badGatewayBody = statusBody(http.StatusBadGateway, metav1.StatusReasonInternalError, "the upstream API server failed before answering; the request may have been applied")
)

// writeStatus writes a ready-made Status body with code.
func writeStatus(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	if h.Get("Cache-Control") == "" {
		h["Cache-Control"] = []string{"no-cache, private"}
	}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
