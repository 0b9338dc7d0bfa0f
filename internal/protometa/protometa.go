// Package protometa sets an object's metadata.resourceVersion in its
// protobuf encoding without decoding the object, so that a LIST can send
// stored objects as they are (docs/architecture.md, "Data flow").
//
// The API server stores an object's protobuf encoding without its
// resourceVersion, which is the revision of its last write and known only
// once the write is stored. Decoding ten thousand pods to set one string
// in each, and encoding them again, is most of the cost of a protobuf
// LIST; inserting the field into the encoding is a copy.
//
// Every Kubernetes object kind has its ObjectMeta as field 1, and
// ObjectMeta has resourceVersion as field 6. The generated marshallers
// write fields in ascending order, so the result is byte for byte what
// they write for the object with its resourceVersion set: the fuzz tests
// hold it to that. An encoding not in that order is refused, never
// guessed at; the caller then decodes.
package protometa

import (
	"errors"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

const (
	metadataField        protowire.Number = 1 // ObjectMeta in every kind
	resourceVersionField protowire.Number = 6 // ObjectMeta.resourceVersion
)

// ErrNotCanonical is returned for an encoding that is malformed or whose
// fields are not in the order the generated marshallers write them.
var ErrNotCanonical = errors.New("protometa: not a canonical object encoding")

// Item is an object's encoding with its resourceVersion set. It refers to
// the encoding it was made from, which must not change while it is used.
type Item struct {
	parts [5][]byte // metadata's tag and new length, metadata before and after the field, the field, the rest
	size  int
}

// WithResourceVersion returns the encoding raw of an object with
// metadata.resourceVersion set to rv, replacing any it has.
func WithResourceVersion(raw []byte, rv string) (Item, error) {
	var meta, rest []byte
	num, typ, n := protowire.ConsumeTag(raw)
	switch {
	case len(raw) == 0:
		rest = raw
	case n < 0:
		return Item{}, ErrNotCanonical
	case num == metadataField && typ == protowire.BytesType:
		m, mn := protowire.ConsumeBytes(raw[n:])
		if mn < 0 {
			return Item{}, ErrNotCanonical
		}
		meta, rest = m, raw[n+mn:]
	case num < metadataField:
		return Item{}, ErrNotCanonical
	default:
		// No metadata: fields after it follow the new one.
		rest = raw
	}
	// A second metadata later on would be merged into the first by a
	// decoder, and could carry a resourceVersion of its own.
	if err := checkOrder(rest, metadataField+1); err != nil {
		return Item{}, err
	}
	at, end, err := resourceVersionSpan(meta)
	if err != nil {
		return Item{}, err
	}
	field := protowire.AppendString(protowire.AppendTag(nil, resourceVersionField, protowire.BytesType), rv)
	metaLen := at + len(field) + len(meta) - end
	head := protowire.AppendVarint(protowire.AppendTag(nil, metadataField, protowire.BytesType), uint64(metaLen))
	it := Item{parts: [5][]byte{head, meta[:at], field, meta[end:], rest}}
	for _, p := range it.parts {
		it.size += len(p)
	}
	return it, nil
}

// resourceVersionSpan returns where in the ObjectMeta encoding meta the
// resourceVersion field is, or goes: [at, end) holds the fields numbered
// 6, and every field before at has a lower number.
func resourceVersionSpan(meta []byte) (at, end int, err error) {
	at, end = -1, -1
	var prev protowire.Number
	for off := 0; off < len(meta); {
		num, typ, n := protowire.ConsumeTag(meta[off:])
		if n < 0 {
			return 0, 0, ErrNotCanonical
		}
		m := protowire.ConsumeFieldValue(num, typ, meta[off+n:])
		if m < 0 || num < prev {
			return 0, 0, ErrNotCanonical
		}
		prev = num
		if at < 0 && num >= resourceVersionField {
			at = off
		}
		if end < 0 && num > resourceVersionField {
			end = off
		}
		off += n + m
	}
	if at < 0 {
		at = len(meta)
	}
	if end < 0 {
		end = len(meta)
	}
	return at, end, nil
}

// checkOrder checks that the fields of b are well formed, in ascending
// order, and numbered from least on.
func checkOrder(b []byte, least protowire.Number) error {
	prev := least
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return ErrNotCanonical
		}
		m := protowire.ConsumeFieldValue(num, typ, b[off+n:])
		if m < 0 || num < prev {
			return ErrNotCanonical
		}
		prev = num
		off += n + m
	}
	return nil
}

// Size is the length of the encoding.
func (it Item) Size() int { return it.size }

// WriteTo writes the encoding to w.
func (it Item) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for _, p := range it.parts {
		if len(p) == 0 {
			continue
		}
		n, err := w.Write(p)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Append appends the encoding to b.
func (it Item) Append(b []byte) []byte {
	for _, p := range it.parts {
		b = append(b, p...)
	}
	return b
}
