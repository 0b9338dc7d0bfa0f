package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kubegate/kubegate/authn"
)

// DefaultFeedSize is how many finished requests a Feed keeps for a
// stream that starts.
const DefaultFeedSize = 500

// subscriberBuffer is how many lines wait for a slow stream before the
// feed drops that stream's next lines, rather than slow requests down.
const subscriberBuffer = 256

// Bounds on the live streams (K.3): in all, and per user name, so that
// no user can make every request pay for streams nobody reads. A
// stream beyond them is refused with 429.
const (
	MaxStreams        = 64
	MaxStreamsPerUser = 4
)

// How long a stream lives, and how often one showing everyone's
// requests asks again whether its user still may (K.3). A stream that
// ends is opened again by the page, authenticated anew.
const (
	StreamLifetime = 30 * time.Minute
	StreamRecheck  = time.Minute
)

// Record is one finished request, as the gateway publishes it. It holds
// no credential. Publishing copies it; what its pointers and slices
// reach (User) must not change afterwards.
type Record struct {
	Time      time.Time
	RequestID string
	// User is who the request was authenticated as; nil when it was
	// not.
	User          *authn.User
	Authenticator string
	// Issuer is a JWT's issuer; "" for other credentials.
	Issuer   string
	Method   string
	Path     string
	RawQuery string
	// Status is the status the client got.
	Status int
	// Reason says why a request was refused: the authentication error
	// of a 401, the Status message of a 403.
	Reason string
}

// Feed keeps the last requests in a ring and hands each new one to the
// live streams. Publish takes one lock and copies the record; the work
// of a line (its verb and resource, its JSON) is done by the streams
// that read it, so a Feed nobody reads costs only the ring.
type Feed struct {
	mu     sync.Mutex
	ring   []Record
	next   int // where the next record goes
	full   bool
	subs   map[*subscription]struct{}
	users  map[string]int // open streams per user name
	closed bool
}

type subscription struct {
	ch chan Record
	// user is the stream's user name; own, when set, the only user whose
	// records it is given, which Publish checks before it copies one.
	user, own string
}

// NewFeed returns a Feed keeping the last size records; size <= 0 means
// DefaultFeedSize.
func NewFeed(size int) *Feed {
	if size <= 0 {
		size = DefaultFeedSize
	}
	return &Feed{ring: make([]Record, size), subs: map[*subscription]struct{}{}, users: map[string]int{}}
}

// Publish records a finished request. It never blocks: a stream whose
// buffer is full misses the record.
func (f *Feed) Publish(r *Record) {
	f.mu.Lock()
	f.ring[f.next] = *r
	f.next++
	if f.next == len(f.ring) {
		f.next, f.full = 0, true
	}
	for s := range f.subs {
		if s.own != "" && (r.User == nil || r.User.Name != s.own) {
			continue
		}
		select {
		case s.ch <- *r:
		default:
		}
	}
	f.mu.Unlock()
}

// errTooManyStreams refuses a stream beyond MaxStreams or
// MaxStreamsPerUser.
var errTooManyStreams = errors.New("too many request streams are open; close one and try again")

// subscribe returns the records kept, oldest first, and a subscription
// for user to every later one (only own's when own is set), with nothing
// missed or repeated between the two. ok is false once the feed is
// closed; err is errTooManyStreams beyond the bounds.
func (f *Feed) subscribe(user, own string) (recent []Record, s *subscription, ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, nil, false, nil
	}
	if len(f.subs) >= MaxStreams || f.users[user] >= MaxStreamsPerUser {
		return nil, nil, true, errTooManyStreams
	}
	f.users[user]++
	if f.full {
		recent = append(recent, f.ring[f.next:]...)
	}
	recent = append(recent, f.ring[:f.next]...)
	s = &subscription{ch: make(chan Record, subscriberBuffer), user: user, own: own}
	f.subs[s] = struct{}{}
	return recent, s, true, nil
}

func (f *Feed) unsubscribe(s *subscription) {
	f.mu.Lock()
	f.drop(s)
	f.mu.Unlock()
}

// drop ends s, if it is still open; f.mu is held.
func (f *Feed) drop(s *subscription) {
	if _, ok := f.subs[s]; !ok {
		return
	}
	delete(f.subs, s)
	close(s.ch)
	if f.users[s.user]--; f.users[s.user] <= 0 {
		delete(f.users, s.user)
	}
}

// Close ends every stream and refuses new ones; Publish still fills the
// ring.
func (f *Feed) Close() {
	f.mu.Lock()
	f.closed = true
	for s := range f.subs {
		f.drop(s)
	}
	f.mu.Unlock()
}

// Decisions of a line.
const (
	DecisionAllowed      = "allowed"
	DecisionUnauthorized = "unauthorized"
	DecisionForbidden    = "forbidden"
	DecisionError        = "error"
)

// Decision classifies a status: 401 unauthorized, 403 forbidden, 5xx
// error, and anything else allowed, as the request got past
// authentication and authorization.
func Decision(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return DecisionUnauthorized
	case status == http.StatusForbidden:
		return DecisionForbidden
	case status >= 500:
		return DecisionError
	}
	return DecisionAllowed
}

// Line is one line of the request stream.
type Line struct {
	Time          time.Time           `json:"time"`
	RequestID     string              `json:"requestID"`
	User          string              `json:"user"`
	UID           string              `json:"uid,omitempty"`
	Groups        []string            `json:"groups"`
	Extra         map[string][]string `json:"extra,omitempty"`
	Authenticator string              `json:"authenticator,omitempty"`
	Issuer        string              `json:"issuer,omitempty"`
	Verb          string              `json:"verb"`
	Method        string              `json:"method"`
	Path          string              `json:"path"`
	APIGroup      string              `json:"apiGroup,omitempty"`
	Namespace     string              `json:"namespace,omitempty"`
	Resource      string              `json:"resource,omitempty"`
	Subresource   string              `json:"subresource,omitempty"`
	Name          string              `json:"name,omitempty"`
	Decision      string              `json:"decision"`
	Status        int                 `json:"status"`
	Reason        string              `json:"reason,omitempty"`
}

// requestInfo tells kube API paths apart as kube-apiserver does.
var requestInfo = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// line makes the stream's line of r.
func line(r *Record) Line {
	l := Line{
		Time: r.Time.UTC(), RequestID: r.RequestID, Groups: []string{}, Authenticator: r.Authenticator,
		Issuer: r.Issuer, Method: r.Method, Path: r.Path, Decision: Decision(r.Status), Status: r.Status, Reason: r.Reason,
	}
	if r.User != nil {
		l.User, l.UID, l.Extra = r.User.Name, r.User.UID, r.User.Extra
		if r.User.Groups != nil {
			l.Groups = r.User.Groups
		}
	}
	req := &http.Request{Method: r.Method, URL: &url.URL{Path: r.Path, RawQuery: r.RawQuery}}
	if info, err := requestInfo.NewRequestInfo(req); err == nil {
		l.Verb = info.Verb
		if info.IsResourceRequest {
			l.APIGroup, l.Namespace, l.Resource, l.Subresource, l.Name = info.APIGroup, info.Namespace, info.Resource, info.Subresource, info.Name
		}
	}
	return l
}

// lineFilter decides which records a stream shows.
type lineFilter struct {
	own      string // when set, only this user's authenticated requests
	user     string // ?user=
	decision string // ?decision=
}

func (lf *lineFilter) keep(r *Record) bool {
	if r.Path == RequestsPath {
		return false // a stream would list itself and every other stream
	}
	if lf.own != "" && (r.User == nil || r.User.Name != lf.own) {
		return false
	}
	if lf.user != "" && (r.User == nil || r.User.Name != lf.user) {
		return false
	}
	if lf.decision != "" && Decision(r.Status) != lf.decision {
		return false
	}
	return true
}

// serveRequests streams the feed as JSON lines, flushed one by one,
// until the client goes away: the records kept, oldest first, then each
// new one as it ends. Those who may not get RequestsViewPath see their
// own requests only.
func (c *Console) serveRequests(w http.ResponseWriter, r *http.Request, id Identity) string {
	q := r.URL.Query()
	lf := lineFilter{user: q.Get("user"), decision: q.Get("decision")}
	all := c.views(r, id).Requests == AllRequests
	if !all {
		lf.own = id.User.Name
		if lf.own == "" {
			lf.own = "\x00" // a user without a name sees nothing
		}
	}
	if c.cfg.Feed == nil || r.Method == http.MethodHead {
		writeStreamHead(w)
		return ""
	}
	recent, s, ok, err := c.cfg.Feed.subscribe(id.User.Name, lf.own)
	if err != nil {
		writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, err.Error())
		return err.Error()
	}
	rc := writeStreamHead(w)
	if !ok {
		return ""
	}
	defer c.cfg.Feed.unsubscribe(s)
	enc := json.NewEncoder(w)
	for i := range recent {
		if lf.keep(&recent[i]) {
			if enc.Encode(line(&recent[i])) != nil {
				return ""
			}
		}
	}
	if rc.Flush() != nil {
		return ""
	}
	lifetime := time.NewTimer(StreamLifetime)
	defer lifetime.Stop()
	recheck := time.NewTicker(StreamRecheck)
	defer recheck.Stop()
	for {
		select {
		case <-r.Context().Done():
			return ""
		case <-lifetime.C:
			return ""
		case <-recheck.C:
			// A user who may no longer see everyone's requests loses
			// the stream; the page opens their own.
			if all && c.views(r, id).Requests != AllRequests {
				return ""
			}
		case rec, open := <-s.ch:
			if !open {
				return ""
			}
			if !lf.keep(&rec) {
				continue
			}
			if enc.Encode(line(&rec)) != nil || rc.Flush() != nil {
				return ""
			}
		}
	}
}

// writeStreamHead starts a request stream's answer and flushes it.
func writeStreamHead(w http.ResponseWriter) *http.ResponseController {
	h := w.Header()
	h["Content-Type"] = []string{"application/x-ndjson"}
	h["X-Accel-Buffering"] = []string{"no"}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	return rc
}
