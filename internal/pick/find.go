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
// element. ok is false when there is no string there or doc is not JSON
// along the way.
func FindString(doc []byte, path []string) (string, bool) {
	s := scanner{b: doc}
	s.ws()
	return s.findString(path, 0)
}

func (s *scanner) findString(path []string, depth int) (string, bool) {
	if depth >= MaxDepth || s.i >= len(s.b) {
		return "", false
	}
	switch s.b[s.i] {
	case '[':
		s.i++
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] == ']' {
			return "", false
		}
		return s.findString(path, depth+1)
	case '"':
		if len(path) > 0 {
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
	case '{':
		if len(path) == 0 {
			return "", false
		}
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			return "", false
		}
		for {
			key, err := s.key()
			if err != nil {
				return "", false
			}
			if string(key) == path[0] {
				return s.findString(path[1:], depth+1)
			}
			if s.skip(depth+1) != nil {
				return "", false
			}
			done, err := s.next('}')
			if err != nil || done {
				return "", false
			}
		}
	}
	return "", false
}

// GraphQLErrors reports whether doc is an object whose top-level "errors"
// member is a non-empty array, and whether any of its first
// maxErrorsScanned elements carries extensions.code "RATELIMITED".
func GraphQLErrors(doc []byte) (present, rateLimited bool) {
	s := scanner{b: doc}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false, false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		return false, false
	}
	for {
		key, err := s.key()
		if err != nil {
			return false, false
		}
		if string(key) == "errors" {
			return s.errorsArray()
		}
		if s.skip(1) != nil {
			return false, false
		}
		done, err := s.next('}')
		if err != nil || done {
			return false, false
		}
	}
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

// FindValue returns the raw JSON value at path in doc, descending objects
// by key (an array on the way is entered at its first element, as in
// FindString). ok is false when there is no value there or doc is not
// JSON along the way.
func FindValue(doc []byte, path []string) ([]byte, bool) {
	s := scanner{b: doc}
	s.ws()
	for depth := 0; ; depth++ {
		if depth >= MaxDepth || s.i >= len(s.b) {
			return nil, false
		}
		if len(path) == 0 {
			start := s.i
			if s.skip(depth) != nil {
				return nil, false
			}
			return s.b[start:s.i], true
		}
		switch s.b[s.i] {
		case '[':
			s.i++
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] == ']' {
				return nil, false
			}
			continue
		case '{':
		default:
			return nil, false
		}
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			return nil, false
		}
		for {
			key, err := s.key()
			if err != nil {
				return nil, false
			}
			if string(key) == path[0] {
				path = path[1:]
				break
			}
			if s.skip(depth+1) != nil {
				return nil, false
			}
			done, err := s.next('}')
			if err != nil || done {
				return nil, false
			}
		}
	}
}
