package audit

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Kinds of Problem.
const (
	// ProblemEdited: the record is not what was written (a changed byte,
	// a broken line, a bad seal signature).
	ProblemEdited = "edited"
	// ProblemRemoved: records are missing here.
	ProblemRemoved = "removed"
	// ProblemReordered: a record is out of its place.
	ProblemReordered = "reordered"
	// ProblemInserted: a record that was not written is here.
	ProblemInserted = "inserted"
	// ProblemUnsealed: the chain ends after its last valid seal: the
	// replica is still running or stopped without closing, or its tail
	// (the final seal included) was cut.
	ProblemUnsealed = "unsealed"
)

// Problem is the first bad place in a chain.
type Problem struct {
	// Kind is one of the Problem* constants.
	Kind string
	// File and Line (from 1) locate it; Index is its position in the
	// whole chain (from 0, across files). For ProblemRemoved it is the
	// line after the gap; for ProblemUnsealed the end of the log.
	File  string
	Line  int
	Index int
	// Seq is the seq the chain expected there, when known.
	Seq uint64
	// Detail says what was found, for a person.
	Detail string
}

func (p *Problem) String() string {
	where := fmt.Sprintf("%s line %d", p.File, p.Line)
	return fmt.Sprintf("%s: record %s at %s: %s", p.Kind, seqText(p.Seq), where, p.Detail)
}

func seqText(s uint64) string {
	if s == 0 {
		return "?"
	}
	return fmt.Sprintf("seq %d", s)
}

// Report is what Verify found in one replica's chain.
type Report struct {
	Replica string
	// Records is the number of lines read; LastSeq the last record's seq.
	Records int
	LastSeq uint64
	// SealedSeq is the seq of the last seal that verifies, through which
	// every record is proven.
	SealedSeq uint64
	// Problem is the first bad record, or nil when the chain is whole and
	// ends on a valid seal.
	Problem *Problem
}

// Whole reports whether the chain is whole and sealed to its end.
func (r *Report) Whole() bool { return r.Problem == nil }

// line is one line of a chain.
type line struct {
	file   string
	n      int // from 1
	raw    []byte
	rec    *Record // nil when it is not a record
	digest string
	sealOK bool
	err    string
}

// Verify checks every replica chain under dir (one subdirectory each,
// as Open writes them) against pub, and returns one report per replica,
// sorted by name. A dir that is itself a replica's directory is checked
// alone.
func Verify(dir string, pub ed25519.PublicKey) ([]Report, error) {
	if files, err := Files(dir); err == nil && len(files) > 0 {
		r, err := VerifyChain(filepath.Base(filepath.Clean(dir)), files, pub)
		if err != nil {
			return nil, err
		}
		return []Report{r}, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Report
	for _, e := range ents {
		if !e.IsDir() || CheckReplica(e.Name()) != nil {
			continue
		}
		files, err := Files(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			continue
		}
		r, err := VerifyChain(e.Name(), files, pub)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no audit chain under %s (expected %s/<replica>/audit-NNNNNN.jsonl)", dir, dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Replica < out[j].Replica })
	return out, nil
}

// VerifyChain checks one replica's chain: its files in order, each line
// a canonical record of the replica, seqs from 1 without a gap, each
// Prev the digest of the line before, each seal signed by pub. It names
// the first bad line, or says the chain is whole through its last seal.
//
// Records before the last valid seal are proven by the seal: walking
// back from it, each Prev must be the digest of the line before. The
// first line not proven that way, or the first a forward walk refuses,
// whichever comes first, is the first bad record.
func VerifyChain(replica string, files []string, pub ed25519.PublicKey) (Report, error) {
	rep := Report{Replica: replica}
	var ls []line
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return rep, err
		}
		raw, partial, err := readLines(f)
		f.Close()
		if err != nil {
			return rep, err
		}
		for i, b := range raw {
			ln := line{file: path, n: i + 1, raw: b, digest: Digest(b)}
			switch r, err := DecodeRecord(b); {
			case partial && i == len(raw)-1:
				ln.err = "the line has no newline (a partial write or a cut)"
			case err != nil:
				ln.err = "the line is not a record's canonical encoding"
			case r.Replica != replica:
				ln.err = fmt.Sprintf("the record names replica %q", r.Replica)
			default:
				ln.rec = r
				if r.Kind == KindSeal {
					ln.sealOK = checkSeal(r, pub)
				}
			}
			ls = append(ls, ln)
		}
	}
	rep.Records = len(ls)
	if n := len(ls); n > 0 && ls[n-1].rec != nil {
		rep.LastSeq = ls[n-1].rec.Seq
	}
	fwd := forward(ls)
	back, sealedSeq, lastSeal := backward(ls)
	rep.SealedSeq = sealedSeq
	p := fwd
	if back != nil && (p == nil || back.Index <= p.Index) {
		p = back
	}
	if p == nil && (lastSeal < len(ls)-1 || len(ls) == 0) {
		p = &Problem{Kind: ProblemUnsealed, Index: len(ls), Seq: rep.LastSeq + 1,
			Detail: fmt.Sprintf("%d records after the last valid seal (seq %d) are not sealed: the replica is running or stopped without closing, or the log's tail was cut", len(ls)-1-lastSeal, sealedSeq)}
		switch {
		case len(ls) == 0:
			p.Detail = "the chain has no record"
		case lastSeal < 0:
			p.Detail = fmt.Sprintf("no seal verifies with this public key, so none of its %d records is proven", len(ls))
		}
		if len(ls) > 0 {
			p.File, p.Line = ls[len(ls)-1].file, ls[len(ls)-1].n+1
		} else if len(files) > 0 {
			p.File, p.Line = files[len(files)-1], 1
		}
	}
	rep.Problem = p
	return rep, nil
}

// checkSeal verifies a seal's signature with pub, and that it names pub.
func checkSeal(r *Record, pub ed25519.PublicKey) bool {
	if r.Key != base64.StdEncoding.EncodeToString(pub) {
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(r.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return false
	}
	msg, err := r.signed()
	return err == nil && ed25519.Verify(pub, msg, sig)
}

func problemAt(ls []line, i int, kind string, seq uint64, detail string) *Problem {
	p := &Problem{Kind: kind, Index: i, Seq: seq, Detail: detail}
	if i < len(ls) {
		p.File, p.Line = ls[i].file, ls[i].n
	}
	return p
}

// forward walks the chain from its first line and returns the first line
// that does not follow from the one before (nil when none does).
func forward(ls []line) *Problem {
	want, prev := uint64(1), Genesis
	var proven uint64 // the seq of the last valid seal
	for i, ln := range ls {
		switch r := ln.rec; {
		case r == nil:
			return problemAt(ls, i, ProblemEdited, want, ln.err)
		case r.Seq != want:
			return seqProblem(ls, i, want)
		case r.Prev != prev:
			return problemAt(ls, i, ProblemEdited, want, "its prev is not the digest of the record before it")
		case r.Kind == KindSeal && !ln.sealOK:
			return problemAt(ls, i, ProblemEdited, want, fmt.Sprintf("the seal's signature does not verify with this public key (the seal names key %s; check --pubkey): the records after seq %d, the last valid seal, up to it are not proven", clipKey(r.Key), proven))
		case r.Kind == KindSeal:
			proven = r.Seq
		}
		want, prev = ls[i].rec.Seq+1, ln.digest
	}
	return nil
}

// seqProblem names what a line holding another seq than want is.
func seqProblem(ls []line, i int, want uint64) *Problem {
	got := ls[i].rec.Seq
	count := map[uint64]int{}
	wantLater := false
	for _, ln := range ls {
		if ln.rec != nil {
			count[ln.rec.Seq]++
		}
	}
	for _, ln := range ls[i:] {
		if ln.rec != nil && ln.rec.Seq == want {
			wantLater = true
		}
	}
	switch {
	case count[got] > 1:
		return problemAt(ls, i, ProblemInserted, want, fmt.Sprintf("seq %d appears more than once", got))
	case got > want && !wantLater:
		return problemAt(ls, i, ProblemRemoved, want, fmt.Sprintf("seq %d to %d are missing before it", want, got-1))
	}
	return problemAt(ls, i, ProblemReordered, want, fmt.Sprintf("seq %d is where seq %d belongs", got, want))
}

// backward walks back from the last seal that verifies, proving each line
// whose digest is the Prev of the proven line after it. It returns the
// first bad line it can name, the seal's seq, and the seal's index (-1
// when no seal verifies).
func backward(ls []line) (*Problem, uint64, int) {
	s := -1
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].rec != nil && ls[i].sealOK {
			s = i
			break
		}
	}
	if s < 0 {
		return nil, 0, -1
	}
	sealed := ls[s].rec.Seq
	b := s
	for b > 0 && ls[b-1].rec != nil && ls[b-1].digest == ls[b].rec.Prev {
		b--
	}
	first := ls[b].rec
	if b == 0 {
		if first.Prev != Genesis || first.Seq != 1 {
			return problemAt(ls, 0, ProblemRemoved, 1, fmt.Sprintf("the chain starts at seq %d: its beginning is missing", first.Seq)), sealed, s
		}
		return nil, sealed, s
	}
	want := first.Seq - 1
	before := ls[b-1]
	switch {
	case before.digest == ls[b].digest:
		return problemAt(ls, b, ProblemInserted, want+1, "it repeats the record before it"), sealed, s
	case before.rec == nil:
		return problemAt(ls, b-1, ProblemEdited, want, before.err), sealed, s
	case before.rec.Seq == want:
		return problemAt(ls, b-1, ProblemEdited, want, "its digest is not the prev of the record after it"), sealed, s
	case before.rec.Seq < want:
		return problemAt(ls, b, ProblemRemoved, before.rec.Seq+1, fmt.Sprintf("seq %d to %d are missing before it", before.rec.Seq+1, want)), sealed, s
	}
	return problemAt(ls, b-1, ProblemInserted, want, fmt.Sprintf("seq %d stands where seq %d belongs and the record after it does not chain to it", before.rec.Seq, want)), sealed, s
}

// clipKey shows at most 44 characters of a seal's key member.
func clipKey(k string) string {
	if len(k) > 44 {
		return fmt.Sprintf("%q…", k[:44])
	}
	return fmt.Sprintf("%q", k)
}
