package tracing

import (
	"context"
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestOffAllocatesNothing: with no recording parent, Start, the span's
// methods and Root with a nil provider allocate nothing.
func TestOffAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	n := testing.AllocsPerRun(100, func() {
		c := Extract(ctx, nil, h)
		c, root := Root(c, nil, SpanOp)
		_, s := Start(c, SpanSandbox)
		s.Str(KeyService, "github")
		s.Int(KeyStatus, 200)
		s.Fail("bad_args")
		s.End()
		root.End()
	})
	if n != 0 {
		t.Fatalf("tracing off allocates %v times per op", n)
	}
}

// TestChildrenOfTheRoot: Start makes a child of a recording root only,
// and Extract takes a valid traceparent as the root's parent.
func TestChildrenOfTheRoot(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tests := []struct {
		name, traceparent string
		remote            bool
	}{
		{"no header", "", false},
		{"valid", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"garbage", "00-ghp_notatrace-x-01", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec.Reset()
			h := http.Header{}
			if tc.traceparent != "" {
				h.Set("traceparent", tc.traceparent)
			}
			ctx, root := Root(Extract(context.Background(), tp, h), tp, SpanOp)
			_, child := Start(ctx, SpanPick)
			child.End()
			root.End()
			spans := rec.Ended()
			if len(spans) != 2 || spans[0].Name() != SpanPick || spans[1].Name() != SpanOp {
				t.Fatalf("spans %v", spans)
			}
			if spans[0].Parent().SpanID() != spans[1].SpanContext().SpanID() {
				t.Error("the child's parent is not the root")
			}
			if got := spans[1].Parent().IsRemote(); got != tc.remote {
				t.Errorf("root's parent remote = %v, want %v", got, tc.remote)
			}
		})
	}
	if _, s := Start(context.Background(), SpanPick); s.Recording() {
		t.Error("a span without a root records")
	}
}

// BenchmarkSpanOff is a stage's span with tracing off: a context lookup.
func BenchmarkSpanOff(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, s := Start(ctx, SpanSandbox)
		s.Fail("bad_args")
		s.End()
	}
}
