package pick

// Lookup returns the bytes of the value at path in doc, descending object
// keys only. dup reports a key on the way that occurs twice in its object:
// the answer is ambiguous, and the cursor is not taken from it.
func Lookup(doc []byte, path []string) (raw []byte, found, dup bool) {
	s := scanner{b: doc}
	s.ws()
	for _, seg := range path {
		if s.i >= len(s.b) || s.b[s.i] != '{' {
			return nil, false, false
		}
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			return nil, false, false
		}
		at := -1
		for {
			key, err := s.key()
			if err != nil {
				return nil, false, false
			}
			if string(key) == seg {
				if at >= 0 {
					return nil, false, true
				}
				at = s.i
			}
			if s.skip(1) != nil {
				return nil, false, false
			}
			done, err := s.next('}')
			if err != nil {
				return nil, false, false
			}
			if done {
				break
			}
		}
		if at < 0 {
			return nil, false, false
		}
		s.i = at
	}
	start := s.i
	if s.skip(1) != nil {
		return nil, false, false
	}
	return s.b[start:s.i], true, false
}

// LastElement returns the last element of the JSON array arr and the
// number of elements, or n = -1 when arr is not an array.
func LastElement(arr []byte) (last []byte, n int) {
	s := scanner{b: arr}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return nil, -1
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		return nil, 0
	}
	for {
		start := s.i
		if s.skip(1) != nil {
			return nil, -1
		}
		last, n = s.b[start:s.i], n+1
		done, err := s.next(']')
		if err != nil {
			return nil, -1
		}
		if done {
			return last, n
		}
	}
}
