// Package names holds the one rule for identity names that travel in HTTP
// headers: a user, UID, group or extra value must reach the API server
// behind the gateway exactly as it was verified. Header parsers trim
// leading and trailing whitespace, and a control character can break a
// header line or split it in two, so a name with either would arrive as a
// different name.
package names

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Problem says why value would not cross an HTTP header unchanged, or
// returns "" when it would. It refuses invalid UTF-8, any control
// character (Unicode category Cc: C0, DEL and C1) and whitespace
// (unicode.IsSpace) at either end. The empty string has no problem here:
// callers that need a name check for it themselves.
func Problem(value string) string {
	// Most names are printable ASCII without a space at either end.
	plain := true
	for i := 0; i < len(value) && plain; i++ {
		plain = value[i] >= 0x20 && value[i] < 0x7f
	}
	if plain && (value == "" || value[0] != ' ' && value[len(value)-1] != ' ') {
		return ""
	}
	if !utf8.ValidString(value) {
		return "is not valid UTF-8"
	}
	for _, r := range value {
		if unicode.IsControl(r) {
			return fmt.Sprintf("contains a control character (%U)", r)
		}
	}
	if first, _ := utf8.DecodeRuneInString(value); unicode.IsSpace(first) {
		return fmt.Sprintf("begins with whitespace (%U)", first)
	}
	if last, _ := utf8.DecodeLastRuneInString(value); unicode.IsSpace(last) {
		return fmt.Sprintf("ends with whitespace (%U)", last)
	}
	return ""
}
