package pick

import (
	"github.com/elevenmessenger/pinned/internal/jsonv"
)

// Streaming lookups in upstream bodies for error handling. An error body
// can be as large as the raw cap (4 MiB) and is read only for one string,
// so nothing here builds a tree: like the projection, these walk the bytes
// and allocate only the string they return.

// maxErrorsScanned bounds how many elements of a GraphQL errors array are
// looked at for a rate-limit code.
const maxErrorsScanned = 64

// FindString returns the string at path in doc: objects are descended by
// key, and an array on the way (or at the end) is entered at its first
// element. ok is false when there is no string there, doc is not JSON
// along the way, or a key on the way occurs twice in its object (the
// answer is ambiguous: readers disagree on which one counts).
func FindString(doc []byte, path []string) (string, bool) {
	s := scanner{b: doc}
	s.ws()
	if !s.find(path) {
		return "", false
	}
	for depth := len(path); s.i < len(s.b) && s.b[s.i] == '['; depth++ {
		if depth >= MaxDepth {
			return "", false
		}
		s.i++
		s.ws()
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	n := jsonv.ScanString(s.b[s.i:])
	if n == 0 {
		return "", false
	}
	v, err := jsonv.Parse(s.b[s.i : s.i+n])
	if err != nil {
		return "", false
	}
	return v.S, true
}

// find moves s to the value at path, descending objects by key and
// entering an array on the way at its first element. It fails on a key
// of the path that occurs twice in its object, which it reads to the end
// (or to where it stops being valid JSON: a key before that point counts).
func (s *scanner) find(path []string) bool {
	for depth := 0; len(path) > 0; depth++ {
		if depth >= MaxDepth || s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case '[':
			s.i++
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] == ']' {
				return false
			}
			continue
		case '{':
		default:
			return false
		}
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			return false
		}
		at := -1
		for {
			key, err := s.key()
			if err == nil && string(key) == path[0] {
				if at >= 0 {
					return false // twice: ambiguous
				}
				at = s.i
			}
			if err == nil {
				err = s.skip(depth + 1)
			}
			done := false
			if err == nil {
				done, err = s.next('}')
			}
			if err != nil {
				// Invalid past this point: the key read so far, if any,
				// counts (an error body cut short still has its message),
				// and no reader finds a second one.
				if at < 0 {
					return false
				}
				break
			}
			if done {
				break
			}
		}
		if at < 0 {
			return false
		}
		s.i, path = at, path[1:]
	}
	return s.i < len(s.b)
}

// GraphQLErrors reports whether doc is an object whose top-level "errors"
// member is a non-empty array, and whether any of its first
// maxErrorsScanned elements carries extensions.code "RATELIMITED".
// ambiguous reports an object that has "errors" twice: whether the
// answer failed cannot be told, so the host refuses it.
func GraphQLErrors(doc []byte) (present, rateLimited, ambiguous bool) {
	s := scanner{b: doc}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false, false, false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		return false, false, false
	}
	seen := false
	for {
		key, err := s.key()
		if err != nil {
			return present, rateLimited, false
		}
		if string(key) == "errors" {
			if seen {
				return false, false, true
			}
			seen = true
			at := s.i
			present, rateLimited = s.errorsArray()
			s.i = at
		}
		if s.skip(1) != nil {
			return present, rateLimited, false
		}
		done, err := s.next('}')
		if err != nil || done {
			return present, rateLimited, false
		}
	}
}

// FindValue returns the raw JSON value at path in doc, descending objects
// by key (an array on the way is entered at its first element, as in
// FindString). ok is false when there is no value there, doc is not JSON
// along the way, or a key on the way occurs twice in its object.
func FindValue(doc []byte, path []string) ([]byte, bool) {
	s := scanner{b: doc}
	s.ws()
	if !s.find(path) {
		return nil, false
	}
	start := s.i
	if s.skip(len(path)) != nil {
		return nil, false
	}
	return s.b[start:s.i], true
}

func (s *scanner) errorsArray() (present, rateLimited bool) {
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return false, false
	}
	s.i++
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] == ']' {
		return false, false
	}
	for n := 0; n < maxErrorsScanned; n++ {
		start := s.i
		if s.skip(2) != nil {
			return true, false
		}
		if code, ok := FindString(s.b[start:s.i], []string{"extensions", "code"}); ok && code == "RATELIMITED" {
			return true, true
		}
		done, err := s.next(']')
		if err != nil || done {
			return true, false
		}
	}
	return true, false
}
