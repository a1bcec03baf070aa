// Package flow is cross-service flow control: within one session in which
// a model reads several services (a research session, an MCP session), it
// records the values each service returned and finds them again in the
// args of a later call, so that a call carrying a value one service
// returned to another service is refused before anything is sent
// (docs/SECURITY.md, "A prompt-injected model").
//
// What is recorded: every string, and every integer of at least
// MinLength digits, that a result's data holds in a picked field of a
// class that carries a member's data or a third party's text
// (registry.ClassIdentifier, ClassText, ClassURL and ClassNumber, whose
// numbers may come as strings); values of the closed classes (enum,
// boolean, time) carry no such data and are not. Values are compared canonically
// (Canonical): NFKC (golang.org/x/text/unicode/norm), case-folded
// (golang.org/x/text/cases), letters and digits only, so a change of
// case, width, spacing or punctuation ("Hello-Fake.IO" for
// "hello-fake.io", "typo-in-readme" for "Typo in README") hides nothing.
// A value shorter than MinLength letters and digits is not recorded.
//
// What counts as carrying: a string arg whose canonical form contains a
// recorded value's (an integer value not next to another digit), or an
// integer arg equal to a recorded integer. An integer is its value,
// however the JSON number is written (9001002.0, 9.001002e6 and 9001002
// are one value: the host sends an integer arg as its value). A call to service B carrying a
// value is a cross-service flow unless B returned that value, or a value
// containing it, itself in this session (B already holds that text), or
// the person allowed a flow to B from a service that returned it (Allow).
//
// What it cannot see: a value the model rewrote (encoded, spelt out,
// translated, summarised, cut into pieces shorter than the whole) is new
// text. The rule catches a model that carries what it read as it read
// it, which is what an injected instruction asks of it; see the threat
// model for what remains.
//
// It imports registry (the class names), internal/jsonv, golang.org/x/text
// and the standard library; internal/research's callers (the sidecar) and
// mcpserver use it, one implementation for both.
package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/elevenmessenger/pinned/sidecar/api"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/elevenmessenger/pinned/internal/jsonv"
	"github.com/elevenmessenger/pinned/registry"
)

// MinLength is the fewest letters and digits a canonical value must have
// to be recorded: six. Shorter values are the words and numbers any two
// services share by chance ("main", "open", "ENG", a port, a year, a page
// size), which would refuse honest calls, while a six-character name or
// number already picks out one thing (about 31 bits of [a-z0-9]).
const MinLength = 6

// DefaultMaxBytes bounds what one session records (4 MiB of canonical
// and original text): a research session's results are at most 1 MiB.
const DefaultMaxBytes = 4 << 20

// MaxAllows bounds the flows a person may allow in one session.
const MaxAllows = 64

// CheckAllows refuses a list of allowed flows that names a service the
// registry lacks, a flow from a service to itself, or more than MaxAllows
// flows; the error says which.
func CheckAllows(reg *registry.Registry, allow []api.Flow) error {
	if len(allow) > MaxAllows {
		return fmt.Errorf("at most %d flows", MaxAllows)
	}
	for i, a := range allow {
		switch {
		case !reg.Has(a.From) || !reg.Has(a.To):
			return fmt.Errorf("flow %d (%q to %q) names a service the registry does not have", i+1, clip(a.From), clip(a.To))
		case a.From == a.To:
			return fmt.Errorf("flow %d is from %s to itself; a service's own values always go back to it", i+1, a.From)
		}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// ErrFull is Record's error when recording the result would pass the
// session's bound: the result must then be withheld (a value that is not
// recorded could flow anywhere).
var ErrFull = errors.New("flow: the session's record of returned values is full")

// Source is the op that first returned a value.
type Source struct {
	Service string
	Op      string
}

// String is "service.op".
func (s Source) String() string { return s.Service + "." + s.Op }

// Match is a recorded value that an arg of a call carries.
type Match struct {
	// Arg names the arg that carries it.
	Arg string
	// Value is the value as the service returned it.
	Value string
	// Source is the first op that returned it; Services are every
	// service that returned it (or a value holding it), sorted.
	Source   Source
	Services []string
}

// Session records one session's returned values. Its methods are safe
// for concurrent use.
type Session struct {
	mu    sync.Mutex
	allow map[api.Flow]bool
	max   int
	bytes int
	// byCanon holds each recorded value by its canonical form; index
	// finds them by their first keyLen bytes.
	byCanon map[string]*entry
	index   map[string][]*entry
	// seen has one bit per hash of an index key (keyHash): a window of an
	// arg whose bit is clear starts no recorded value, without a map
	// lookup.
	seen []uint64
	// known holds, by service, the canonical values it returned, joined
	// by NUL (which no canonical form holds): does a service hold a text.
	known map[string]*strings.Builder
	fold  cases.Caser
}

type entry struct {
	canon    string
	orig     string
	first    Source
	services []string
	numeric  bool
}

// keyLen is the index key's length in bytes: every recorded canonical
// value has at least MinLength runes, so at least keyLen bytes.
const keyLen = MinLength

// seenBits is the size of Session.seen: 2^16 bits (8 KiB).
const seenBits = 16

// keyHash hashes the keyLen bytes of c at i into seenBits bits.
func keyHash(c string, i int) uint32 {
	x := uint64(c[i]) | uint64(c[i+1])<<8 | uint64(c[i+2])<<16 | uint64(c[i+3])<<24 | uint64(c[i+4])<<32 | uint64(c[i+5])<<40
	return uint32((x * 0x9E3779B97F4A7C15) >> (64 - seenBits))
}

// New returns an empty session allowing the flows in allow; maxBytes <= 0
// means DefaultMaxBytes.
func New(allow []api.Flow, maxBytes int) *Session {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	s := &Session{allow: map[api.Flow]bool{}, max: maxBytes, byCanon: map[string]*entry{},
		index: map[string][]*entry{}, known: map[string]*strings.Builder{}, fold: cases.Fold(), seen: make([]uint64, 1<<seenBits/64)}
	for _, a := range allow {
		s.allow[a] = true
	}
	return s
}

// Allowed reports whether the person allowed values from service from to
// go to service to.
func (s *Session) Allowed(from, to string) bool { return s.allow[api.Flow{From: from, To: to}] }

// Canonical is the form values are compared in: NFKC, case-folded, only
// letters and decimal digits kept.
func Canonical(v string) string {
	return canonical(cases.Fold(), v)
}

func canonical(fold cases.Caser, v string) string {
	ascii := true
	for i := 0; i < len(v); i++ {
		if v[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii { // ASCII is its own NFKC; folding it is lower-casing
		out := make([]byte, 0, len(v))
		for i := 0; i < len(v); i++ {
			switch c := v[i]; {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
				out = append(out, c)
			case 'A' <= c && c <= 'Z':
				out = append(out, c+'a'-'A')
			}
		}
		return string(out)
	}
	v = fold.String(norm.NFKC.String(v))
	out := make([]byte, 0, len(v))
	for _, r := range v {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			out = utf8.AppendRune(out, r)
		}
	}
	return string(out)
}

// recordable reports whether a value of the class is recorded (see the
// package comment).
func recordable(class string) bool {
	switch class {
	case registry.ClassIdentifier, registry.ClassText, registry.ClassURL:
		return true
	case registry.ClassNumber:
		return true // a number, or a string holding one (HubSpot's properties are strings)
	case registry.ClassEnum, registry.ClassBoolean, registry.ClassTime:
		return false
	}
	return true // a path no field names: record it (fail closed)
}

// leaf is one scalar of a JSON document with its key path.
type leaf struct {
	path   string
	text   string
	number bool
}

// leaves walks a JSON document and returns its strings and numbers with
// the dot path of object keys leading to each (array indices left out,
// as a pick field maps over arrays). A document the strict parser
// (internal/jsonv, the args' own) refuses is read leniently
// (encoding/json's tokens): invalid JSON yields what came before the
// error, duplicate keys all their values.
func leaves(doc []byte) []leaf {
	v, err := jsonv.Parse(doc)
	if err != nil {
		return leavesLenient(doc)
	}
	var out []leaf
	var walk func(v *jsonv.Value, path string)
	walk = func(v *jsonv.Value, path string) {
		switch v.Kind {
		case jsonv.String:
			out = append(out, leaf{path: path, text: v.S})
		case jsonv.Number:
			out = append(out, leaf{path: path, text: v.S, number: true})
		case jsonv.Array:
			for i := range v.A {
				walk(&v.A[i], path)
			}
		case jsonv.Object:
			for i := range v.O {
				p := v.O[i].Key
				if path != "" {
					p = path + "." + p
				}
				walk(&v.O[i].Value, p)
			}
		}
	}
	walk(&v, "")
	return out
}

// leavesLenient is leaves over encoding/json's token stream.
func leavesLenient(doc []byte) []leaf {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out []leaf
	var stack []string // key path; "" marks an array level
	type frame struct {
		obj    bool
		keyNxt bool
	}
	var frames []frame
	for {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		inObj := len(frames) > 0 && frames[len(frames)-1].obj
		if inObj && frames[len(frames)-1].keyNxt {
			if k, ok := t.(string); ok {
				stack = append(stack, k)
				frames[len(frames)-1].keyNxt = false
				continue
			}
		}
		switch t := t.(type) {
		case json.Delim:
			switch t {
			case '{':
				frames = append(frames, frame{obj: true, keyNxt: true})
				continue
			case '[':
				frames = append(frames, frame{})
				continue
			default: // '}' or ']'
				frames = frames[:len(frames)-1]
			}
		case string:
			out = append(out, leaf{path: strings.Join(stack, "."), text: t})
		case json.Number:
			out = append(out, leaf{path: strings.Join(stack, "."), text: t.String(), number: true})
		}
		// A value ended: the enclosing object's key is done.
		if len(frames) > 0 && frames[len(frames)-1].obj {
			stack = stack[:len(stack)-1]
			frames[len(frames)-1].keyNxt = true
		}
	}
}

// classOf finds the class of the field a leaf path lies under: the
// longest picked field that is the path or a prefix of it.
func classOf(pick *registry.Pick, path string) string {
	for p := path; ; {
		if c := pick.Class(p); c != "" {
			return c
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return ""
		}
		p = p[:i]
	}
}

// maxIntegerDigits bounds the digits integerDigits writes out: more than
// any id or amount has (pick refuses longer numbers).
const maxIntegerDigits = 64

// integerDigits returns the decimal digits of a JSON number's value when
// it is an integer, however the number is written ("-123", "123.0",
// "1.23e2" and "12300E-2" are all "123"; the host renders an integer arg
// written so as its value, and a reader reads it so), or "" for a number
// that is not an integer or would have more than maxIntegerDigits digits.
func integerDigits(n string) string {
	n = strings.TrimPrefix(n, "-")
	mant, exp := n, 0
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		e, err := strconv.Atoi(n[i+1:])
		if err != nil || e > maxIntegerDigits || e < -maxIntegerDigits-len(n) {
			return ""
		}
		mant, exp = n[:i], e
	}
	ip, fp, _ := strings.Cut(mant, ".")
	digits := ip + fp
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return ""
		}
	}
	point := len(ip) + exp // the digits before the decimal point
	switch {
	case point < 0:
		point = 0
	case point > len(digits):
		if point > maxIntegerDigits {
			return ""
		}
		digits += strings.Repeat("0", point-len(digits))
	}
	if strings.Trim(digits[point:], "0") != "" {
		return "" // a fraction
	}
	if d := strings.TrimLeft(digits[:point], "0"); d != "" {
		return d
	}
	return "0"
}

// Record records the values of one successful result: data is the
// result's projected data, pick the op's pick (its classes decide what is
// recorded). It is all or nothing: when the values would pass the
// session's bound it records none and returns ErrFull.
func (s *Session) Record(service, op string, pick *registry.Pick, data json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	type val struct{ canon, orig string }
	var vals []val
	size := 0
	for _, l := range leaves(data) {
		if !recordable(classOf(pick, l.path)) {
			continue
		}
		var c string
		if l.number {
			c = integerDigits(l.text)
		} else {
			c = canonical(s.fold, l.text)
		}
		if utf8.RuneCountInString(c) < MinLength {
			continue
		}
		vals = append(vals, val{c, l.text})
		size += len(c) + 1
		if s.byCanon[c] == nil {
			size += len(c) + len(l.text) + 64
		}
	}
	if s.bytes+size > s.max {
		return ErrFull
	}
	s.bytes += size
	kb := s.known[service]
	if kb == nil {
		kb = &strings.Builder{}
		s.known[service] = kb
	}
	for _, v := range vals {
		e := s.byCanon[v.canon]
		if e == nil {
			e = &entry{canon: v.canon, orig: v.orig, first: Source{service, op}, numeric: allDigits(v.canon)}
			s.byCanon[v.canon] = e
			s.index[v.canon[:keyLen]] = append(s.index[v.canon[:keyLen]], e)
			h := keyHash(v.canon, 0)
			s.seen[h/64] |= 1 << (h % 64)
		}
		if !contains(e.services, service) {
			e.services = insertSorted(e.services, service)
			kb.WriteString(v.canon)
			kb.WriteByte(0)
		}
	}
	return nil
}

// Check finds the recorded values that the args of a call to service
// carry. refused is the first one that would be a cross-service flow (no
// service that returned it is service itself, holds it in a value of its
// own, or is allowed to flow to service), or nil; carried lists every
// match, in arg order, for a consent to show where its values came from.
func (s *Session) Check(service string, args json.RawMessage) (refused *Match, carried []Match) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byCanon) == 0 {
		return nil, nil
	}
	for _, a := range s.argValues(args) {
		for _, e := range s.find(a) {
			m := Match{Arg: a.name, Value: e.orig, Source: e.first, Services: append([]string(nil), e.services...)}
			carried = append(carried, m)
			if refused == nil && !s.mayGo(e, service) {
				refused = &m
			}
		}
	}
	return refused, carried
}

// mayGo reports whether a recorded value may be sent to service.
func (s *Session) mayGo(e *entry, service string) bool {
	for _, from := range e.services {
		if from == service || s.allow[api.Flow{From: from, To: service}] {
			return true
		}
	}
	kb := s.known[service]
	return kb != nil && strings.Contains(kb.String(), e.canon)
}

// argValue is one scalar of a call's args, canonical, with the name of
// the top-level arg it is in.
type argValue struct {
	name   string
	canon  string
	number bool
}

// argValues reads a call's args (a JSON object; every scalar, nested or
// repeated, counts) canonically.
func (s *Session) argValues(args json.RawMessage) []argValue {
	var out []argValue
	for _, l := range leaves(args) {
		name, _, _ := strings.Cut(l.path, ".")
		if l.number {
			if d := integerDigits(l.text); d != "" {
				out = append(out, argValue{name, d, true})
			}
			continue
		}
		out = append(out, argValue{name, canonical(s.fold, l.text), false})
	}
	return out
}

// find returns the recorded entries a carries, each once.
func (s *Session) find(a argValue) []*entry {
	if a.number {
		if e := s.byCanon[a.canon]; e != nil {
			return []*entry{e}
		}
		return nil
	}
	var out []*entry
	c := a.canon
	for i := 0; i+keyLen <= len(c); i++ {
		if h := keyHash(c, i); s.seen[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		for _, e := range s.index[c[i:i+keyLen]] {
			if !strings.HasPrefix(c[i:], e.canon) || e.numeric && !digitBounded(c, i, i+len(e.canon)) || containsEntry(out, e) {
				continue
			}
			out = append(out, e)
		}
	}
	return out
}

// digitBounded reports whether c[i:j] has no decimal digit right before
// or right after it.
func digitBounded(c string, i, j int) bool {
	if r, _ := utf8.DecodeLastRuneInString(c[:i]); i > 0 && unicode.IsDigit(r) {
		return false
	}
	if r, _ := utf8.DecodeRuneInString(c[j:]); j < len(c) && unicode.IsDigit(r) {
		return false
	}
	return true
}

func allDigits(c string) bool {
	for _, r := range c {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func containsEntry(xs []*entry, x *entry) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func insertSorted(xs []string, x string) []string {
	i := 0
	for i < len(xs) && xs[i] < x {
		i++
	}
	return append(xs[:i], append([]string{x}, xs[i:]...)...)
}
