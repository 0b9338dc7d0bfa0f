package apiserver

import (
	"net/http"
	"sync"
	"unicode/utf8"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/warning"
)

// The limits kube-apiserver puts on a request's warnings: once their text
// passes warningBudget characters, every warning is cut to
// warningItemLimit characters and the ones that no longer fit are dropped.
const (
	warningBudget    = 4 * 1024
	warningItemLimit = 256
)

// warningRecorder turns the warnings added during one request
// (warning.AddWarning) into Warning headers of its answer, as
// kube-apiserver's recorder does: `299 - "text"`, each text once, within
// warningBudget.
type warningRecorder struct {
	w http.ResponseWriter

	mu      sync.Mutex
	seen    map[string]bool
	texts   []recordedWarning // in the order added, to write again cut
	written int               // characters written
	cutting bool              // over budget: every text is cut
}

type recordedWarning struct{ agent, text string }

var _ warning.Recorder = (*warningRecorder)(nil)

// withWarnings gives r's context a recorder that writes to w.
func withWarnings(w http.ResponseWriter, r *http.Request) *http.Request {
	return r.WithContext(warning.WithWarningRecorder(r.Context(), &warningRecorder{w: w}))
}

// AddWarning implements warning.Recorder.
func (rec *warningRecorder) AddWarning(agent, text string) {
	if text == "" {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.cutting && rec.written >= warningBudget || rec.seen[text] {
		return
	}
	if rec.seen == nil {
		rec.seen = map[string]bool{}
	}
	rec.seen[text] = true
	rec.texts = append(rec.texts, recordedWarning{agent, text})
	if n := utf8.RuneCountInString(text); rec.cutting || rec.written+n <= warningBudget {
		rec.add(agent, text)
		return
	}
	// Over budget for the first time: write everything again, cut.
	rec.cutting, rec.written = true, 0
	rec.w.Header().Del("Warning")
	for _, w := range rec.texts {
		rec.add(w.agent, w.text)
	}
}

// add writes one header, cut when over budget.
func (rec *warningRecorder) add(agent, text string) {
	n := utf8.RuneCountInString(text)
	if rec.cutting && n > warningItemLimit {
		text, n = string([]rune(text)[:warningItemLimit]), warningItemLimit
	}
	h, err := utilnet.NewWarningHeader(299, agent, text)
	if err != nil {
		return // kube drops a text a header cannot carry
	}
	rec.written += n
	rec.w.Header().Add("Warning", h)
}
