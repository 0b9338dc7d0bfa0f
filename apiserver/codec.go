package apiserver

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/munnerz/goautoneg"
	"golang.org/x/net/http/httpguts"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The media types the server speaks.
const (
	mediaJSON     = runtime.ContentTypeJSON
	mediaYAML     = runtime.ContentTypeYAML
	mediaProtobuf = runtime.ContentTypeProtobuf
)

// maxBodyBytes bounds a request body, as kube-apiserver does (3 MiB objects
// plus envelope).
const maxBodyBytes = 3 << 20

// output says how to encode a response.
type output struct {
	info runtime.SerializerInfo
	// convert is the meta.k8s.io kind the client asked the response as
	// (Table, PartialObjectMetadata or PartialObjectMetadataList); nil for
	// the resource's own kind.
	convert *schema.GroupVersionKind
	// aggregated: the client asked for apidiscovery.k8s.io/v2 discovery.
	aggregated bool
	// gzip: the client accepts a gzip-encoded answer.
	gzip bool
}

// table reports whether the client asked for a meta.k8s.io Table.
func (o output) table() bool { return o.convert != nil && o.convert.Kind == "Table" }

// acceptOptions say which "as=" forms an endpoint can produce.
type acceptOptions struct {
	// convert: a resource endpoint, which also answers as a Table or as
	// PartialObjectMetadata[List] (D.7).
	convert bool
	// aggregated: /api or /apis asking whether the client wants
	// apidiscovery.k8s.io/v2 discovery; clauses without "as=" are skipped
	// (B.6).
	aggregated bool
	// noProtobuf: the answer has no protobuf encoding (an unstructured
	// kind's, I.2).
	noProtobuf bool
}

// negotiate picks the response encoding from the Accept header. An empty
// header, */* and application/* mean JSON. Like kube-apiserver it takes the
// first clause it can serve, trying JSON, YAML and protobuf in that order;
// a clause whose parameters it cannot honour is skipped (D.7).
func (s *Server) negotiate(r *http.Request, opts acceptOptions) (output, error) {
	out, err := s.negotiateMedia(r, opts)
	out.gzip = err == nil && httpguts.HeaderValuesContainsToken(r.Header["Accept-Encoding"], "gzip")
	return out, err
}

func (s *Server) negotiateMedia(r *http.Request, opts acceptOptions) (output, error) {
	header := r.Header.Get("Accept")
	if header == "" {
		return output{info: s.json}, nil
	}
	// Quality values order the clauses but, as in kube-apiserver, q=0 does
	// not rule one out.
	for _, c := range goautoneg.ParseAccept(header) {
		for _, info := range []runtime.SerializerInfo{s.json, s.yaml, s.protobuf} {
			if opts.noProtobuf && info.MediaType == mediaProtobuf {
				continue
			}
			typ, sub, _ := strings.Cut(info.MediaType, "/")
			if !(c.Type == "*" && c.SubType == "*" || c.Type == typ && (c.SubType == "*" || c.SubType == sub)) {
				continue
			}
			if out, ok := acceptClause(c.Params, info, opts); ok {
				return out, nil
			}
		}
	}
	return output{}, notAcceptable("only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf")
}

// acceptClause returns how to answer an Accept clause with parameters
// params in the encoding info, and false if the endpoint cannot.
func acceptClause(params map[string]string, info runtime.SerializerInfo, opts acceptOptions) (output, bool) {
	out := output{info: info}
	var target *schema.GroupVersionKind
	for k, v := range params {
		switch k {
		case "as", "g", "v":
			if target == nil {
				target = &schema.GroupVersionKind{}
			}
			switch k {
			case "as":
				target.Kind = v
			case "g":
				target.Group = v
			case "v":
				target.Version = v
			}
		case "stream":
			if v != "" && (v != "watch" || info.StreamSerializer == nil) {
				return output{}, false
			}
		case "sv":
			if v != "" && (v != "v1" || opts.aggregated) {
				return output{}, false
			}
		}
	}
	switch {
	case opts.aggregated:
		// Only a clause that asks for aggregated discovery will do, wherever
		// it stands in the header; kube-apiserver v1.37 no longer serves
		// v2beta1 (B.6).
		out.aggregated = true
		return out, target != nil && *target == apidiscoveryv2.SchemeGroupVersion.WithKind("APIGroupDiscoveryList")
	case target == nil:
		return out, true
	case !opts.convert || target.Group != metav1.GroupName || target.Version != "v1" && target.Version != "v1beta1":
		return output{}, false
	}
	switch target.Kind {
	case "Table":
		// kube-apiserver has no protobuf Table.
		if info.MediaType == mediaProtobuf {
			return output{}, false
		}
	case "PartialObjectMetadata", "PartialObjectMetadataList":
	default:
		return output{}, false
	}
	out.convert = target
	return out, true
}

// write encodes obj (whose apiVersion and kind are set) with status code.
func (s *Server) write(w http.ResponseWriter, out output, code int, obj runtime.Object) {
	ct := out.info.MediaType
	if out.aggregated {
		gvk := obj.GetObjectKind().GroupVersionKind()
		ct = fmt.Sprintf("%s;g=%s;v=%s;as=%s", ct, gvk.Group, gvk.Version, gvk.Kind)
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	dw := &deferredWriter{w: w, code: code, gzip: out.gzip}
	if err := out.info.Serializer.Encode(obj, dw); err != nil {
		s.log.Warn("encode response", "kind", obj.GetObjectKind().GroupVersionKind().Kind, "err", err)
	}
	dw.Close()
}

// deferredWriter sends the status line on the first write, when the size
// of the answer is known. As kube-apiserver does, an answer over 128 KiB
// goes gzip-encoded, at the fastest level, to a client that accepts it
// (B.1). The serializers write an object in one piece, but a list in many
// (the streaming collection encoders, B.1), so while the answer may still
// be compressed, the writes of a streamed list are held until they pass the
// threshold or the answer ends.
type deferredWriter struct {
	w    http.ResponseWriter
	code int
	gzip bool
	// streamed: the answer comes in pieces whatever the first one's size,
	// and its first 128 KiB are held even without gzip, so that a failure
	// in them can still be answered with an error.
	streamed bool
	started  bool
	held     []byte
	gz       *gzip.Writer
}

// streamFirstWrite is the longest first write a streaming encoder makes:
// "{" for JSON, the 4-byte envelope prefix for protobuf. A longer first
// write is a whole object, whose size decides at once.
const streamFirstWrite = 4

func (d *deferredWriter) Write(p []byte) (int, error) {
	switch {
	case d.started:
		return d.out().Write(p)
	case !d.streamed && (!d.gzip || (d.held == nil && len(p) > streamFirstWrite)):
		d.start(len(p))
		return d.out().Write(p)
	}
	d.held = append(d.held, p...)
	if len(d.held) <= gzipThreshold {
		return len(p), nil
	}
	d.start(len(d.held))
	held := d.held
	d.held = nil
	if _, err := d.out().Write(held); err != nil {
		return 0, err
	}
	return len(p), nil
}

// discard drops what is held, if nothing has been sent: the answer can
// still be an error instead. It reports whether it could.
func (d *deferredWriter) discard() bool {
	d.held = nil
	return !d.started
}

// start sends the status line for an answer whose first piece has size n.
func (d *deferredWriter) start(n int) {
	d.started = true
	if d.gzip && n > gzipThreshold {
		d.w.Header().Set("Content-Encoding", "gzip")
		d.w.Header().Set("Vary", "Accept-Encoding")
		d.gz = gzipPool.Get().(*gzip.Writer)
		d.gz.Reset(d.w)
	}
	d.w.WriteHeader(d.code)
}

func (d *deferredWriter) out() io.Writer {
	if d.gz != nil {
		return d.gz
	}
	return d.w
}

var gzipPool = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return gz
}}

// Close sends what is held, or the status line of an empty answer, and
// ends the gzip stream.
func (d *deferredWriter) Close() {
	if !d.started {
		d.start(len(d.held))
		_, _ = d.w.Write(d.held)
		d.held = nil
	}
	if d.gz != nil {
		_ = d.gz.Close()
		d.gz.Reset(nil)
		gzipPool.Put(d.gz)
		d.gz = nil
	}
}

// gzipThreshold is the size from which kube-apiserver compresses answers.
const gzipThreshold = 128 << 10

// writeErr answers with err as a metav1.Status in the format the client
// accepts (JSON when it accepts nothing we speak).
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	st := toStatus(err)
	if st.Code == http.StatusInternalServerError {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		// as kube-apiserver: client-go waits this long and retries
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	out, nerr := s.negotiate(r, acceptOptions{})
	if nerr != nil {
		// As kube-apiserver: plain indented JSON when the client accepts
		// nothing an error can be written in (D.7).
		data, _ := json.MarshalIndent(st, "", "  ")
		w.Header().Set("Content-Type", mediaJSON)
		w.WriteHeader(int(st.Code))
		_, _ = w.Write(data)
		return
	}
	s.write(w, out, int(st.Code), st)
}

// Route media types: what kube-apiserver's routes declare they produce.
// Lists and the old watch paths also produce the watch streams.
var (
	routeMediaTypes     = []string{mediaJSON, mediaYAML, mediaProtobuf}
	routeListMediaTypes = append(routeMediaTypes[:len(routeMediaTypes):len(routeMediaTypes)], mediaJSON+";stream=watch", mediaProtobuf+";stream=watch")
)

// checkRouteAccept refuses a request none of whose Accept media types,
// parameters ignored, is */* or one the route produces, as kube-apiserver's
// router does before any handler runs; application/* is not enough there
// (D.7).
func checkRouteAccept(r *http.Request, produces []string) error {
	header := r.Header.Get("Accept")
	if header == "" {
		return nil
	}
	for _, part := range strings.Split(header, ",") {
		mt, _, _ := strings.Cut(part, ";")
		mt = strings.TrimSpace(mt)
		if mt == "*/*" {
			return nil
		}
		for _, p := range produces {
			if p == mt {
				return nil
			}
		}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: "406: Not Acceptable\n\nAvailable representations: " + strings.Join(produces, ", "),
		Details: &metav1.StatusDetails{}}}
}

// toStatus converts any error to the Status kube-apiserver would send.
func toStatus(err error) *metav1.Status {
	var st metav1.Status
	if se, ok := err.(apierrors.APIStatus); ok {
		st = se.Status()
	} else if sf, ok := storeFailure(err); ok {
		st = sf
	} else if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// a handler that ran out of time, answered as kube's handlers
		// answer it (J.4)
		st = storeErr(err, schema.GroupResource{}, "").(apierrors.APIStatus).Status()
	} else {
		st = apierrors.NewInternalError(err).ErrStatus
	}
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	st.Kind, st.APIVersion = "Status", "v1"
	return &st
}

// decoded is a request body decoded into a typed object.
type decoded struct {
	obj runtime.Object
	// strictErr lists unknown or duplicate fields (JSON and YAML only).
	strictErr error
}

// readBody reads at most maxBodyBytes of the request body.
func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read request body: %v", err))
	}
	if len(data) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return data, nil
}

// bodyInfo returns the serializer of the request's Content-Type.
func (s *Server) bodyInfo(r *http.Request) (runtime.SerializerInfo, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return s.json, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return runtime.SerializerInfo{}, unsupportedMediaType()
	}
	switch mt {
	case mediaJSON:
		return s.json, nil
	case mediaYAML:
		return s.yaml, nil
	case mediaProtobuf:
		return s.protobuf, nil
	}
	return runtime.SerializerInfo{}, unsupportedMediaType()
}

// decode decodes data of serializer info into into, whose kind must be gvk.
// Unknown fields are reported in strictErr rather than failing.
func (s *Server) decode(info runtime.SerializerInfo, data []byte, gvk schema.GroupVersionKind, into runtime.Object) (decoded, error) {
	dec := info.Serializer
	if info.StrictSerializer != nil {
		dec = info.StrictSerializer
	}
	obj, got, err := dec.Decode(data, &gvk, into)
	var strictErr error
	if err != nil && runtime.IsStrictDecodingError(err) {
		strictErr, err = err, nil
	}
	if err != nil {
		return decoded{}, decodeErr(err, got, gvk, data)
	}
	if got != nil && got.Kind != gvk.Kind {
		// kube decodes the body's kind and fails to convert it to its
		// internal form of the URL's kind.
		from := reflect.TypeOf(obj).Elem().String() // e.g. v1.ConfigMap
		return decoded{}, decodeErr(fmt.Errorf("converting (%s) to (%s.%s): unknown conversion", from, internalPackage(gvk.Group), gvk.Kind), got, gvk, data)
	}
	if got != nil && got.GroupVersion() != gvk.GroupVersion() {
		// The same kind in another group version (an events.k8s.io Event
		// sent to core events) converts, and then the version is refused.
		return decoded{}, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", got.GroupVersion(), gvk.GroupVersion()))
	}
	if obj != into {
		return decoded{}, apierrors.NewBadRequest(fmt.Sprintf("decoded %T, want %T", obj, into))
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return decoded{obj: obj, strictErr: strictErr}, nil
}

// decodeErr is kube's 400 for a body it could not decode as want (D.5):
// naming the body's kind and version when it has one, else quoting the
// start of the body.
func decodeErr(err error, got *schema.GroupVersionKind, want schema.GroupVersionKind, data []byte) error {
	if got != nil && got.Kind != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", got.Kind, got.Version, want.Kind, err))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", want.Kind, err, bodySummary(data)))
}

// bodySummary is the start of a body in an error: up to 30 bytes, as text
// when it looks like a JSON object, else in hex.
func bodySummary(data []byte) string {
	const max = 30
	more := ""
	if len(data) > max {
		data, more = data[:max], " ..."
	}
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		return string(data) + more
	}
	return hex.EncodeToString(data) + more
}

// internalPackage is the Go package of kube's internal types of group, as
// its conversion errors name them: core for the core group and for
// events.k8s.io, whose Event is the core one, else the group's first label.
func internalPackage(group string) string {
	if group == "" || group == "events.k8s.io" {
		return "core"
	}
	name, _, _ := strings.Cut(group, ".")
	return name
}

// fieldValidation is the fieldValidation query parameter: Strict, Warn (the
// default) or Ignore.
func fieldValidation(r *http.Request) (string, error) {
	switch v := r.URL.Query().Get("fieldValidation"); v {
	case "", metav1.FieldValidationWarn:
		return metav1.FieldValidationWarn, nil
	case metav1.FieldValidationStrict, metav1.FieldValidationIgnore:
		return v, nil
	default:
		return "", optionsInvalid(r, field.NotSupported(field.NewPath("fieldValidation"), v,
			[]string{"", metav1.FieldValidationIgnore, metav1.FieldValidationStrict, metav1.FieldValidationWarn}))
	}
}

// checkFields applies the fieldValidation directive to a strict decoding
// error: Strict fails with 400, Warn adds Warning headers, Ignore drops it.
func checkFields(w http.ResponseWriter, directive string, gvk schema.GroupVersionKind, strictErr error) error {
	if strictErr == nil {
		return nil
	}
	switch directive {
	case "Strict":
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, strictErr))
	case "Warn":
		if se, ok := strictErr.(interface{ Errors() []error }); ok {
			for _, e := range se.Errors() {
				addWarning(w, e.Error())
			}
		} else {
			addWarning(w, strictErr.Error())
		}
	}
	return nil
}

// addWarning adds an RFC 7234 warning header as kube-apiserver sends them.
func addWarning(w http.ResponseWriter, text string) {
	text = strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(text)
	w.Header().Add("Warning", `299 - "`+text+`"`)
}

func unsupportedMediaType() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"}}
}

// unsupportedPatchType is kube-apiserver's answer to a PATCH whose
// Content-Type is no patch type (D.7).
func unsupportedPatchType() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
		Reason: metav1.StatusReasonUnsupportedMediaType, Message: "415: Unsupported Media Type", Details: &metav1.StatusDetails{}}}
}
