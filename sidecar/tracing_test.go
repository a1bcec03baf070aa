package sidecar

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/elevenmessenger/pinned/internal/demo/fakeapi"
	"github.com/elevenmessenger/pinned/internal/tracing"
	"github.com/elevenmessenger/pinned/internal/tracing/export"
	"github.com/elevenmessenger/pinned/sidecar/grant"
)

// spanDump is every text a span holds: its name, attributes, status,
// events and links.
func spanDump(s sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s status=%v:%s", s.Name(), s.Status().Code, s.Status().Description)
	for _, a := range s.Attributes() {
		fmt.Fprintf(&b, " %s=%s", a.Key, a.Value.String())
	}
	for _, e := range s.Events() {
		fmt.Fprintf(&b, " event:%s", e.Name)
		for _, a := range e.Attributes {
			fmt.Fprintf(&b, " %s=%s", a.Key, a.Value.String())
		}
	}
	for _, l := range s.Links() {
		fmt.Fprintf(&b, " link:%s", l.SpanContext.TraceID())
	}
	return b.String()
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

// traces groups ended spans by trace id, in the order their roots ended.
func traces(spans []sdktrace.ReadOnlySpan) map[trace.TraceID][]sdktrace.ReadOnlySpan {
	out := map[trace.TraceID][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		out[s.SpanContext().TraceID()] = append(out[s.SpanContext().TraceID()], s)
	}
	return out
}

// TestTracingSpansOfAnOp: a traced op is one trace whose root is a child
// of the caller's traceparent and whose children are, in order, the
// grant, the state store (nonce, limits), the sandbox, the upstream
// request and pick; a refused op's trace stops where it was refused.
// Hostile: an arg value shaped like a token, the credential, the sealed
// grant and the answer's data appear in no span.
func TestTracingSpansOfAnOp(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	sampler, err := export.Sampler(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sampler))
	env := newTestEnv(t, func(c *Config) { c.Tracer = tp })

	const hostile = "ghp_HOSTILE0tokenLOOKING0value0in0an0arg"
	args := `{"owner":"pinned-tester","repo":"notes","title":"` + hostile + `","body":"` + hostile + `"}`
	sealed := env.seal(t, grant.Grant{Access: grant.AccessWrite})
	// A caller's parent, flagged not sampled: it is only the parent.
	const parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	const parentSpan = "00f067aa0ba902b7"
	body, _ := json.Marshal(OpRequest{Service: "github", Op: "create_issue", Args: json.RawMessage(args), Grant: sealed})
	r := env.do(t, http.MethodPost, "/v1/ops", body, "traceparent", "00-"+parentTrace+"-"+parentSpan+"-00")
	if r.status != http.StatusOK {
		t.Fatalf("op: %d %s", r.status, r.body)
	}
	// The replay: refused at the state store, nothing run.
	if r2 := env.do(t, http.MethodPost, "/v1/ops", body); r2.err.Error.Code != string(CodeGrantReplayed) {
		t.Fatalf("replay: %d %s", r2.status, r2.body)
	}
	// A malformed traceparent is no parent.
	read := env.seal(t, grant.Grant{Access: grant.AccessRead})
	rb, _ := json.Marshal(OpRequest{Service: "github", Op: "list_issues", Args: json.RawMessage(`{"owner":"pinned-tester","repo":"notes","per_page":2}`), Grant: read})
	if r3 := env.do(t, http.MethodPost, "/v1/ops", rb, "traceparent", "00-"+strings.Repeat("0", 32)+"-"+parentSpan+"-01"); r3.status != http.StatusOK {
		t.Fatalf("read: %d %s", r3.status, r3.body)
	}

	spans := rec.Ended()
	byTrace := traces(spans)
	if len(byTrace) != 3 {
		t.Fatalf("%d traces for 3 ops", len(byTrace))
	}
	wantOK := []string{tracing.SpanGrantOpen, tracing.SpanState, tracing.SpanState, tracing.SpanSandbox, tracing.SpanUpstream, tracing.SpanPick}
	var roots int
	for id, ss := range byTrace {
		var root sdktrace.ReadOnlySpan
		for _, s := range ss {
			if s.Name() == tracing.SpanOp {
				if root != nil {
					t.Fatalf("trace %s has two roots", id)
				}
				root = s
			}
		}
		if root == nil {
			t.Fatalf("trace %s has no %s span", id, tracing.SpanOp)
		}
		roots++
		var names []string
		for _, s := range ss {
			if s == root {
				continue
			}
			if s.Parent().SpanID() != root.SpanContext().SpanID() {
				t.Errorf("%s's parent is not the op's root", s.Name())
			}
			if s.StartTime().Before(root.StartTime()) || s.EndTime().After(root.EndTime()) {
				t.Errorf("%s is outside its root", s.Name())
			}
			names = append(names, s.Name())
		}
		// Ended order is start order: each stage ends before the next starts.
		for i := 1; i < len(ss)-1; i++ {
			if ss[i].StartTime().Before(ss[i-1].EndTime()) {
				t.Errorf("%s starts before %s ended", ss[i].Name(), ss[i-1].Name())
			}
		}
		code := attr(root, string(tracing.KeyCode))
		switch {
		case code == string(CodeGrantReplayed):
			want := []string{tracing.SpanGrantOpen, tracing.SpanState}
			if strings.Join(names, ",") != strings.Join(want, ",") {
				t.Errorf("replay's spans %v, want %v", names, want)
			}
			if root.Parent().IsValid() {
				t.Errorf("the replay (no traceparent) has a parent")
			}
		case code == "" && attr(root, string(tracing.KeyOp)) == "create_issue":
			if strings.Join(names, ",") != strings.Join(wantOK, ",") {
				t.Errorf("op's spans %v, want %v", names, wantOK)
			}
			if root.SpanContext().TraceID().String() != parentTrace || root.Parent().SpanID().String() != parentSpan || !root.Parent().IsRemote() {
				t.Errorf("root %s is not a child of the caller's traceparent (parent %s)", root.SpanContext().TraceID(), root.Parent().SpanID())
			}
			if attr(root, string(tracing.KeyService)) != "github" || attr(root, string(tracing.KeyAccess)) != "write" || attr(root, string(tracing.KeySource)) != "ops" {
				t.Errorf("root attributes: %s", spanDump(root))
			}
			for _, s := range ss {
				if s.Name() == tracing.SpanUpstream && attr(s, string(tracing.KeyStatus)) != "201" {
					t.Errorf("upstream span: %s", spanDump(s))
				}
			}
		case code == "" && attr(root, string(tracing.KeyOp)) == "list_issues":
			if strings.Join(names, ",") != strings.Join(wantOK, ",") {
				t.Errorf("read's spans %v, want %v", names, wantOK)
			}
			if root.Parent().IsValid() {
				t.Errorf("a malformed traceparent became a parent")
			}
		default:
			t.Errorf("unexpected root %s", spanDump(root))
		}
	}

	// The secret scan: nothing a caller sent, the credential or the answer.
	var data map[string]any
	if err := json.Unmarshal(r.body, &struct{ Data *map[string]any }{&data}); err != nil {
		t.Fatal(err)
	}
	forbidden := []string{hostile, fakeapi.Token("github"), sealed, read, "pinned-tester", "notes"}
	for _, v := range data {
		if s, ok := v.(string); ok && len(s) >= 6 {
			forbidden = append(forbidden, s)
		}
	}
	for _, s := range spans {
		d := spanDump(s)
		for _, f := range forbidden {
			if strings.Contains(d, f) {
				t.Errorf("span %s holds %q: %s", s.Name(), f, d)
			}
		}
	}
}

// TestTracingOffIsFree: without a Tracer no span is started and the op
// path's span calls allocate nothing.
func TestTracingOffIsFree(t *testing.T) {
	env := newTestEnv(t, nil)
	if env.srv.cfg.Tracer != nil {
		t.Fatal("tracing is on by default")
	}
	r := env.op(t, "github", "list_issues", `{"owner":"pinned-tester","repo":"notes","per_page":2}`, env.seal(t, grant.Grant{Access: grant.AccessRead}))
	if r.status != http.StatusOK || r.header.Get("traceparent") != "" {
		t.Fatalf("op: %d %s", r.status, r.header)
	}
}
