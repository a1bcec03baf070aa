package audit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/elevenmessenger/pinned/sidecar/api"
)

// testKey is a fixed sealing key, so failures reproduce.
func testKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
}

// writeChain writes a closed chain of n op records for replica under dir,
// sealing every sealEvery records and rotating past maxFile bytes.
func writeChain(t testing.TB, dir, replica string, n, sealEvery int, maxFile int64) {
	t.Helper()
	clock := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	l, err := Open(dir, Options{Replica: replica, Key: testKey(), SealEvery: sealEvery, SealInterval: time.Hour,
		MaxFileBytes: maxFile, Note: "test", Now: func() time.Time { clock = clock.Add(time.Millisecond); return clock }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rc, err := l.Append(context.Background(), api.AuditEvent{Source: "ops", Bot: "b0b0b0b0b0b0b0b0", Grant: fmt.Sprintf("%016x", i),
			Service: "github", Op: "list_repos", ArgsSHA256: strings.Repeat("a", 64), Target: fmt.Sprintf("/user/repos?page=%d", i),
			Status: 200, Bytes: int64(100 + i)})
		if err != nil {
			t.Fatal(err)
		}
		if rc.Replica != replica || rc.Seq == 0 || len(rc.Digest) != 64 {
			t.Fatalf("receipt %+v", rc)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func verifyOne(t testing.TB, dir string) Report {
	t.Helper()
	reps, err := Verify(dir, testKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 {
		t.Fatalf("%d reports, want 1", len(reps))
	}
	return reps[0]
}

func TestChainWholeAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	writeChain(t, dir, "r1", 60, 7, 2048)
	files, _ := Files(filepath.Join(dir, "r1"))
	if len(files) < 3 {
		t.Fatalf("%d files: the chain did not rotate", len(files))
	}
	rep := verifyOne(t, dir)
	if !rep.Whole() {
		t.Fatalf("fresh chain: %v", rep.Problem)
	}
	if rep.LastSeq != rep.SealedSeq || rep.Records != int(rep.LastSeq) {
		t.Fatalf("report %+v: want every record sealed", rep)
	}
	// Reopening continues the chain; closing again leaves it whole.
	writeChain(t, dir, "r1", 5, 100, 2048)
	rep2 := verifyOne(t, dir)
	if !rep2.Whole() || rep2.LastSeq <= rep.LastSeq {
		t.Fatalf("after reopening: %+v %v", rep2, rep2.Problem)
	}
}

func TestVerifyOtherKeyFails(t *testing.T) {
	dir := t.TempDir()
	writeChain(t, dir, "r1", 10, 4, 1<<20)
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32)).Public().(ed25519.PublicKey)
	reps, err := Verify(dir, other)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].Whole() || !strings.Contains(reps[0].Problem.Detail, "--pubkey") {
		t.Fatalf("verified with another key: %+v", reps[0].Problem)
	}
}

// chainLines is a chain's lines with the file each is in.
type chainLines struct {
	files []string
	lines [][]byte
	in    []int // file index of each line
}

func readChain(t testing.TB, dir string) *chainLines {
	t.Helper()
	files, err := Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := &chainLines{files: files}
	for fi, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, ln := range bytes.SplitAfter(b, []byte("\n")) {
			if len(ln) > 0 {
				c.lines = append(c.lines, bytes.TrimSuffix(ln, []byte("\n")))
				c.in = append(c.in, fi)
			}
		}
	}
	return c
}

func (c *chainLines) write(t testing.TB) {
	t.Helper()
	bufs := make([]bytes.Buffer, len(c.files))
	for i, ln := range c.lines {
		bufs[c.in[i]].Write(ln)
		bufs[c.in[i]].WriteByte('\n')
	}
	for i, f := range c.files {
		if err := os.WriteFile(f, bufs[i].Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *chainLines) clone() *chainLines {
	d := &chainLines{files: c.files, in: append([]int(nil), c.in...)}
	for _, ln := range c.lines {
		d.lines = append(d.lines, append([]byte(nil), ln...))
	}
	return d
}

// reseal re-encodes a record after f changed it (an editor who knows the
// format) and returns its line.
func reencode(t testing.TB, line []byte, f func(*Record)) []byte {
	t.Helper()
	r, err := DecodeRecord(line)
	if err != nil {
		t.Fatal(err)
	}
	f(r)
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVerifyNamesTampering edits, removes, reorders and inserts records
// the ways an editor would, and checks verify names the first bad one.
func TestVerifyNamesTampering(t *testing.T) {
	base := t.TempDir()
	writeChain(t, base, "r1", 30, 5, 1500)
	orig := readChain(t, filepath.Join(base, "r1"))
	n := len(orig.lines)
	seal := -1
	for i, ln := range orig.lines {
		if r, _ := DecodeRecord(ln); r != nil && r.Kind == KindSeal && i > 3 {
			seal = i
			break
		}
	}
	tests := []struct {
		name   string
		tamper func(c *chainLines)
		index  int
		kind   string
	}{
		{name: "a status edited", index: 4, kind: ProblemEdited, tamper: func(c *chainLines) {
			c.lines[4] = reencode(t, c.lines[4], func(r *Record) { r.Status = 500 })
		}},
		{name: "a target edited and the next prev fixed", index: 8, kind: ProblemEdited, tamper: func(c *chainLines) {
			c.lines[8] = reencode(t, c.lines[8], func(r *Record) { r.Target = "/user/repos?page=x" })
			c.lines[9] = reencode(t, c.lines[9], func(r *Record) { r.Prev = Digest(c.lines[8]) })
		}},
		// The rechained seal fails: the records since the seal before it
		// are not proven, and the failed seal is named.
		{name: "every later record rechained", index: seal, kind: ProblemEdited, tamper: func(c *chainLines) {
			c.lines[3] = reencode(t, c.lines[3], func(r *Record) { r.Code = "grant_replayed" })
			for i := 4; i < len(c.lines); i++ {
				c.lines[i] = reencode(t, c.lines[i], func(r *Record) { r.Prev = Digest(c.lines[i-1]) })
			}
		}},
		{name: "the open record removed", index: 0, kind: ProblemRemoved, tamper: func(c *chainLines) { c.remove(0) }},
		{name: "a record removed", index: 10, kind: ProblemRemoved, tamper: func(c *chainLines) { c.remove(10) }},
		{name: "the final seal removed", index: n - 1, kind: ProblemUnsealed, tamper: func(c *chainLines) { c.remove(n - 1) }},
		{name: "two records swapped", index: 12, kind: ProblemReordered, tamper: func(c *chainLines) {
			c.lines[12], c.lines[13] = c.lines[13], c.lines[12]
		}},
		{name: "a record copied in", index: 7, kind: ProblemInserted, tamper: func(c *chainLines) { c.insert(7, c.lines[6]) }},
		{name: "a forged record chained in", index: 7, kind: ProblemInserted, tamper: func(c *chainLines) {
			forged := reencode(t, c.lines[7], func(r *Record) { r.Target = "/forged" })
			c.insert(7, forged)
		}},
		{name: "a seal re-signed by another key", index: seal, kind: ProblemEdited, tamper: func(c *chainLines) {
			other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
			c.lines[seal] = reencode(t, c.lines[seal], func(r *Record) {
				if r.Kind != KindSeal {
					panic("not a seal")
				}
				r.Sig = ""
				msg, _ := r.signed()
				r.Sig = fmtSig(ed25519.Sign(other, msg))
			})
		}},
		{name: "a space added", index: 2, kind: ProblemEdited, tamper: func(c *chainLines) {
			c.lines[2] = append([]byte{' '}, c.lines[2]...)
		}},
		{name: "the last newline cut", index: n - 1, kind: ProblemEdited, tamper: func(c *chainLines) {
			// write() adds newlines; cut it after writing instead.
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := orig.clone()
			c.files = copyFiles(t, orig.files, dir)
			tt.tamper(c)
			c.write(t)
			if tt.name == "the last newline cut" {
				last := c.files[len(c.files)-1]
				b, _ := os.ReadFile(last)
				os.WriteFile(last, b[:len(b)-1], 0o600)
			}
			rep := verifyOne(t, dir)
			if rep.Whole() {
				t.Fatal("verify says whole")
			}
			if rep.Problem.Index != tt.index || rep.Problem.Kind != tt.kind {
				t.Fatalf("problem %+v, want %s at index %d", rep.Problem, tt.kind, tt.index)
			}
		})
	}
}

func (c *chainLines) remove(i int) {
	c.lines = append(c.lines[:i:i], c.lines[i+1:]...)
	c.in = append(c.in[:i:i], c.in[i+1:]...)
}

func (c *chainLines) insert(i int, ln []byte) {
	c.lines = append(c.lines[:i:i], append([][]byte{append([]byte(nil), ln...)}, c.lines[i:]...)...)
	c.in = append(c.in[:i:i], append([]int{c.in[i]}, c.in[i:]...)...)
}

// copyFiles copies a chain's files into dir/r1 and returns the copies.
func copyFiles(t testing.TB, files []string, dir string) []string {
	t.Helper()
	d := filepath.Join(dir, "r1")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, filepath.Base(f))
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestVerifyPropertyOneChange changes, drops, reorders or inserts one
// record, or changes one byte, at random places, and checks that verify
// names the first line that differs from the original every time.
func TestVerifyPropertyOneChange(t *testing.T) {
	base := t.TempDir()
	writeChain(t, base, "r1", 40, 6, 2500)
	orig := readChain(t, filepath.Join(base, "r1"))
	n := len(orig.lines)
	rng := rand.New(rand.NewPCG(26, 1))
	runs := 300
	if testing.Short() {
		runs = 100
	}
	for run := range runs {
		c := orig.clone()

		var what string
		switch op := rng.IntN(5); op {
		case 0: // one byte changed (a newline included)
			i := rng.IntN(n)
			pos := rng.IntN(len(c.lines[i]) + 1)
			b := byte(rng.IntN(256))
			if pos == len(c.lines[i]) {
				if b == '\n' {
					b = 'x'
				}
				c.lines[i] = append(c.lines[i], b) // the newline replaced: this line runs into the next
				if i+1 < n {
					c.lines[i] = append(c.lines[i], c.lines[i+1]...)
					c.remove(i + 1)
				}
			} else {
				if c.lines[i][pos] == b {
					b ^= 0x20
				}
				c.lines[i][pos] = b
			}
			what = fmt.Sprintf("byte %d of line %d set to %q", pos, i, b)
		case 1: // a record dropped
			i := rng.IntN(n)
			c.remove(i)
			what = fmt.Sprintf("line %d dropped", i)
		case 2: // two adjacent records swapped
			i := rng.IntN(n - 1)
			c.lines[i], c.lines[i+1] = c.lines[i+1], c.lines[i]
			what = fmt.Sprintf("lines %d and %d swapped", i, i+1)
		case 3: // a copy of another record inserted
			i, j := rng.IntN(n), rng.IntN(n)
			c.insert(i, c.lines[j])
			what = fmt.Sprintf("line %d copied in before line %d", j, i)
		case 4: // a record edited and re-encoded
			i := rng.IntN(n)
			c.lines[i] = reencode(t, c.lines[i], func(r *Record) { r.Time = "2020-01-01T00:00:00Z" })
			what = fmt.Sprintf("line %d's time edited", i)
		}
		// The first bad record is the first line that differs from the
		// original (a copy inserted after its original differs one later).
		want := firstDiff(orig.lines, c.lines)
		dir := t.TempDir()
		c.files = copyFiles(t, orig.files, dir)
		c.write(t)
		rep := verifyOne(t, dir)
		if rep.Whole() || rep.Problem.Index != want {
			t.Fatalf("run %d (%s): problem %+v, want index %d", run, what, rep.Problem, want)
		}
	}
}

// firstDiff is the index of the first line of b that is not a's.
func firstDiff(a, b [][]byte) int {
	for i := range b {
		if i >= len(a) || !bytes.Equal(a[i], b[i]) {
			return i
		}
	}
	return len(b)
}

func TestReopenCutsPartialLine(t *testing.T) {
	dir := t.TempDir()
	writeChain(t, dir, "r1", 3, 100, 1<<20)
	files, _ := Files(filepath.Join(dir, "r1"))
	f, _ := os.OpenFile(files[0], os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":99,"prev":"`)
	f.Close()
	l, err := Open(dir, Options{Replica: "r1", Key: testKey()})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c := readChain(t, filepath.Join(dir, "r1"))
	var opens []string
	for _, ln := range c.lines {
		r, err := DecodeRecord(ln)
		if err != nil {
			t.Fatalf("line %q: %v", ln, err)
		}
		if r.Kind == KindOpen {
			opens = append(opens, r.Note)
		}
	}
	if len(opens) != 2 || !strings.Contains(opens[1], "partial last line of 18 bytes") {
		t.Fatalf("open notes %q", opens)
	}
	if rep := verifyOne(t, dir); !rep.Whole() {
		t.Fatalf("after the cut: %v", rep.Problem)
	}
}

func TestReopenRefusesDamagedLastRecord(t *testing.T) {
	dir := t.TempDir()
	writeChain(t, dir, "r1", 3, 100, 1<<20)
	files, _ := Files(filepath.Join(dir, "r1"))
	f, _ := os.OpenFile(files[0], os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not a record\n")
	f.Close()
	if _, err := Open(dir, Options{Replica: "r1", Key: testKey()}); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("Open: %v, want the damaged last record refused", err)
	}
}

func TestOpenOptionsChecked(t *testing.T) {
	tests := []struct {
		name string
		opt  Options
		want string
	}{
		{name: "no key", opt: Options{Replica: "r1"}, want: "sealing key"},
		{name: "dot replica", opt: Options{Replica: "..", Key: testKey()}, want: "replica name"},
		{name: "slash replica", opt: Options{Replica: "a/b", Key: testKey()}, want: "replica name"},
		{name: "bad fsync", opt: Options{Replica: "r1", Key: testKey(), Fsync: "never"}, want: "fsync policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(t.TempDir(), tt.opt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open: %v, want %q", err, tt.want)
			}
		})
	}
}

// TestWriteFailureIsSticky: once a record cannot be written, the log
// refuses every later one and Ready says so (the sidecar fails closed).
func TestWriteFailureIsSticky(t *testing.T) {
	l, err := Open(t.TempDir(), Options{Replica: "r1", Key: testKey(), SealInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.mu.Lock()
	l.f.Close() // the next write fails
	l.mu.Unlock()
	if _, err := l.Append(context.Background(), api.AuditEvent{Service: "github", Op: "list_repos"}); err == nil {
		t.Fatal("append to a closed file succeeded")
	}
	if err := l.Ready(); err == nil {
		t.Fatal("Ready after a failed write")
	}
	if _, err := l.Append(context.Background(), api.AuditEvent{}); err == nil {
		t.Fatal("append after a failed write succeeded")
	}
}

func TestTwoReplicasVerifiedApart(t *testing.T) {
	dir := t.TempDir()
	writeChain(t, dir, "a", 10, 3, 1<<20)
	writeChain(t, dir, "b", 12, 3, 1<<20)
	reps, err := Verify(dir, testKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 || reps[0].Replica != "a" || reps[1].Replica != "b" || !reps[0].Whole() || !reps[1].Whole() {
		t.Fatalf("reports %+v", reps)
	}
	// A record of b moved into a's chain is refused there.
	ca, cb := readChain(t, filepath.Join(dir, "a")), readChain(t, filepath.Join(dir, "b"))
	ca.lines[2] = cb.lines[2]
	ca.write(t)
	reps, _ = Verify(dir, testKey().Public().(ed25519.PublicKey))
	if reps[0].Whole() || reps[0].Problem.Index != 2 {
		t.Fatalf("b's record in a: %+v", reps[0].Problem)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	dir := f.TempDir()
	writeChain(f, dir, "r1", 4, 2, 1<<20)
	for _, ln := range readChain(f, filepath.Join(dir, "r1")).lines {
		f.Add(ln)
	}
	f.Add([]byte(`{"seq":1}`))
	f.Add([]byte(`{"seq":1,"seq":2}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := DecodeRecord(line)
		if err != nil {
			return
		}
		b, err := r.Encode()
		if err != nil || !bytes.Equal(b, line) {
			t.Fatalf("decoded %q but it encodes as %q (%v)", line, b, err)
		}
	})
}

// TestSecondWriterRefused: two processes (here two opens) on one
// replica's chain would fork it; the second is refused.
func TestSecondWriterRefused(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Replica: "r1", Key: testKey(), SealInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{Replica: "r1", Key: testKey()}); err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("second open: %v", err)
	}
	l2, err := Open(dir, Options{Replica: "r2", Key: testKey(), SealInterval: time.Hour})
	if err != nil {
		t.Fatalf("another replica: %v", err)
	}
	l2.Close()
	l.Close()
	l3, err := Open(dir, Options{Replica: "r1", Key: testKey(), SealInterval: time.Hour})
	if err != nil {
		t.Fatalf("after close: %v", err)
	}
	l3.Close()
}
