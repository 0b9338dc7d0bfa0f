package inspect

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"strings"
)

// shortNames are OpenSSL's short names for the attribute types found in
// certificate subjects, so a printed name reads exactly like
// `openssl x509 -noout -subject`. Other types print as dotted OIDs, as
// OpenSSL prints them.
var shortNames = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.4":                    "SN",
	"2.5.4.5":                    "serialNumber",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "street",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.12":                   "title",
	"2.5.4.13":                   "description",
	"2.5.4.15":                   "businessCategory",
	"2.5.4.17":                   "postalCode",
	"2.5.4.42":                   "GN",
	"2.5.4.43":                   "initials",
	"2.5.4.44":                   "generationQualifier",
	"2.5.4.46":                   "dnQualifier",
	"2.5.4.65":                   "pseudonym",
	"2.5.4.97":                   "organizationIdentifier",
	"0.9.2342.19200300.100.1.1":  "UID",
	"0.9.2342.19200300.100.1.25": "DC",
	"1.2.840.113549.1.9.1":       "emailAddress",
}

// formatName renders a DER-encoded name the way OpenSSL 3 prints it by
// default (`openssl x509 -noout -subject`): RDNs in encoded order joined by
// ", ", multi-valued RDNs joined by " + ", "SN = value" pairs, with
// OpenSSL's escaping.
func formatName(raw []byte) string {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(raw, &seq); err != nil || len(rest) != 0 {
		return "(unparsable name)"
	}
	var b strings.Builder
	for i, rdn := range seq {
		if i > 0 {
			b.WriteString(", ")
		}
		for j, atv := range rdn {
			if j > 0 {
				b.WriteString(" + ")
			}
			name, ok := shortNames[atv.Type.String()]
			if !ok {
				name = atv.Type.String()
			}
			b.WriteString(name)
			b.WriteString(" = ")
			b.WriteString(formatValue(atv.Value))
		}
	}
	return b.String()
}

// formatValue escapes one attribute value as OpenSSL's default name format
// does: the value is quoted when it holds one of , + < > ; or starts with
// '#' or a space or ends with a space; '"' and '\' are backslash-escaped;
// control and non-ASCII bytes print as \XX.
func formatValue(v any) string {
	s, ok := v.(string)
	if !ok {
		der, err := asn1.Marshal(v)
		if err != nil {
			return fmt.Sprintf("%v", v)
		}
		return "#" + strings.ToUpper(hex.EncodeToString(der))
	}
	var b strings.Builder
	quote := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%02X", c)
		case strings.IndexByte(",+<>;", c) >= 0,
			i == 0 && (c == '#' || c == ' '),
			i == len(s)-1 && c == ' ':
			quote = true
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	if quote {
		return `"` + b.String() + `"`
	}
	return b.String()
}
