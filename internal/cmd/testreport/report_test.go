package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/report.golden")

// TestReport: a recorded `go test -json` stream (testdata/stream.json: a
// package that passes with two skips, one with a failing subtest, one
// without tests, one that does not build) gives go test's lines for the
// failures, one line per skip with its reason, and a FAIL verdict.
func TestReport(t *testing.T) {
	in, err := os.Open(filepath.Join("testdata", "stream.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer
	r := newReport(&out)
	if err := r.read(in); err != nil {
		t.Fatal(err)
	}
	if r.summary(5) {
		t.Error("summary says the run passed; two packages failed")
	}
	golden := filepath.Join("testdata", "report.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("report differs from %s (go test -run TestReport -update):\n%s", golden, out.String())
	}
	for _, s := range []string{"context line", "got 1, want 2", "undefined: undefined"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the report lacks %q", s)
		}
	}
	if strings.Contains(out.String(), "noise that passes") {
		t.Error("a passing test's log is printed")
	}
}

func TestReportPasses(t *testing.T) {
	tests := []struct {
		name, stream string
		ok           bool
		lines        []string
	}{
		{name: "pass", ok: true, stream: `{"Action":"start","Package":"p"}
{"Action":"pass","Package":"p","Elapsed":1.5}`, lines: []string{"ok  \tp\t1.500s", "PASS: 1 packages passed, 0 failed, 0 without tests; 0 tests skipped"}},
		{name: "unfinished", ok: false, stream: `{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Test":"T","Output":"x\n"}`, lines: []string{"FAIL p (did not finish)"}},
		{name: "not JSON is printed", ok: true, stream: "go: downloading example.com/x v1.0.0", lines: []string{"go: downloading example.com/x v1.0.0"}},
		{name: "a skip without a message", ok: true, stream: `{"Action":"skip","Package":"p","Test":"T"}
{"Action":"pass","Package":"p","Elapsed":0}`, lines: []string{"SKIP p T: (no reason given)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := newReport(&out)
			if err := r.read(strings.NewReader(tt.stream)); err != nil {
				t.Fatal(err)
			}
			if ok := r.summary(3); ok != tt.ok {
				t.Errorf("ok %v, want %v:\n%s", ok, tt.ok, out.String())
			}
			for _, l := range tt.lines {
				if !strings.Contains(out.String(), l+"\n") {
					t.Errorf("no line %q in:\n%s", l, out.String())
				}
			}
		})
	}
}
