package ca

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"

	"github.com/kubegate/kubegate/internal/names"
)

// ErrUnsafeName is wrapped by every NameError: a CN or O value that an
// identity header (X-Remote-User, X-Remote-Group) would not carry as
// written.
var ErrUnsafeName = errors.New("name would change in identity headers")

// ErrHiddenSubject is wrapped by ValidateSubject's errors for a subject
// that some readers would see differently from others.
var ErrHiddenSubject = errors.New("subject reads differently in different parsers")

// checkHiddenSubject returns an ErrHiddenSubject error for a parsed
// subject with a value that is not a string or with more than one CN.
func checkHiddenSubject(n pkix.Name) error {
	cns := 0
	for _, atv := range n.Names {
		if _, ok := atv.Value.(string); !ok {
			return fmt.Errorf("%w: the %s attribute's value is not a string", ErrHiddenSubject, attributeName(atv.Type))
		}
		if atv.Type.Equal(oidCommonName) {
			if cns++; cns > 1 {
				return fmt.Errorf("%w: it holds more than one CN", ErrHiddenSubject)
			}
		}
	}
	return nil
}

// attributeName is the short name of a subject attribute type, with its
// OID; or the OID alone.
func attributeName(oid asn1.ObjectIdentifier) string {
	switch {
	case oid.Equal(oidCommonName):
		return "CN (" + oid.String() + ")"
	case oid.Equal(oidOrganization):
		return "O (" + oid.String() + ")"
	}
	return oid.String()
}

// NameError is a CN or O value that ValidateName refuses.
type NameError struct {
	// Kind names the value in the message as the caller knows it: a flag
	// ("--cn"), a field ("common name") or an attribute ("CN").
	Kind    string
	Value   string
	Problem string // for example "contains a control character (U+000A)"
}

// Error quotes the value with %q, so a control character shows as an
// escape and is never printed raw.
func (e *NameError) Error() string { return fmt.Sprintf("%s %q: %s", e.Kind, e.Value, e.Problem) }

// Unwrap returns ErrUnsafeName.
func (e *NameError) Unwrap() error { return ErrUnsafeName }

// ValidateName checks a value that is to become a certificate's CN (a
// Kubernetes user) or O (a group). The gateway forwards both in HTTP
// headers, whose parsers trim leading and trailing whitespace and which a
// control character can break or split, so upstream would see a different
// identity than the certificate names. ValidateName refuses invalid UTF-8,
// any control character (Unicode category Cc: C0, DEL and C1) and leading
// or trailing whitespace (unicode.IsSpace). The empty string is not its
// concern: callers that need a name check for it themselves. kind names
// the value in the error, which is a *NameError.
func ValidateName(kind, value string) error {
	if problem := nameProblem(value); problem != "" {
		return &NameError{Kind: kind, Value: value, Problem: problem}
	}
	return nil
}

// nameProblem says what ValidateName refuses in value, or returns "".
func nameProblem(value string) string { return names.Problem(value) }

// subjectName is one CN or O value of a subject.
type subjectName struct {
	kind  string // "CN" or "O"
	value string
}

// subjectNames returns every CN and O value of n in encoded order. A
// parsed subject lists each attribute in Names, including a second CN
// that CommonName does not show; a subject built by hand falls back to
// CommonName and Organization.
func subjectNames(n pkix.Name) []subjectName {
	var out []subjectName
	if len(n.Names) == 0 {
		if n.CommonName != "" {
			out = append(out, subjectName{"CN", n.CommonName})
		}
		for _, o := range n.Organization {
			out = append(out, subjectName{"O", o})
		}
		return out
	}
	for _, atv := range n.Names {
		v, ok := atv.Value.(string)
		switch {
		case !ok:
		case atv.Type.Equal(oidCommonName):
			out = append(out, subjectName{"CN", v})
		case atv.Type.Equal(oidOrganization):
			out = append(out, subjectName{"O", v})
		}
	}
	return out
}

// ValidateSubject applies ValidateName to every CN and O value of a
// parsed subject (a CSR's or a certificate's) and returns the first
// error, whose Kind is "CN" or "O". Before that it refuses a subject that
// readers would not all see alike (ErrHiddenSubject): an attribute whose
// value is not a string type Go reads (a UniversalString or OCTET STRING
// O, say, which Go leaves out of Organization while OpenSSL prints it),
// or a second CN (Go and kube take the last, other readers the first).
func ValidateSubject(n pkix.Name) error {
	if err := checkHiddenSubject(n); err != nil {
		return err
	}
	for _, s := range subjectNames(n) {
		if err := ValidateName(s.kind, s.value); err != nil {
			return err
		}
	}
	return nil
}
