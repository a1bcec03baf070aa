// Package tracing is the OpenTelemetry tracing of an op: one trace per
// op, a root span the service starts and child spans for the grant, the
// state store, the sandbox, the upstream request and pick. A span carries
// only registry names, codes and counts: never an arg value, a secret or
// response data.
//
// A child span exists only under a recording parent in the context, so
// with tracing off (no TracerProvider) every call is a context lookup and
// allocates nothing. It imports nothing of pinned's.
package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of pinned's spans.
const Scope = "github.com/elevenmessenger/pinned"

// The span names, one per stage of an op (docs/OPERATING.md, "Tracing").
const (
	SpanOp        = "pinned.op"
	SpanGrantOpen = "pinned.grant.open"
	SpanState     = "pinned.state"
	SpanSandbox   = "pinned.sandbox"
	SpanUpstream  = "pinned.upstream"
	SpanPick      = "pinned.pick"
)

// The attribute keys a span may carry. Their values are registry names,
// codes, statuses and counts; nothing else is ever set.
const (
	KeyService   = attribute.Key("pinned.service")
	KeyOp        = attribute.Key("pinned.op")
	KeyAccess    = attribute.Key("pinned.access")
	KeySource    = attribute.Key("pinned.source")
	KeyCode      = attribute.Key("pinned.code")
	KeyDeny      = attribute.Key("pinned.deny")
	KeyStateCall = attribute.Key("pinned.state.call")
	KeyStatus    = attribute.Key("http.response.status_code")
	KeyBytes     = attribute.Key("pinned.bytes")
)

// Span is one span, or nothing when tracing is off: its zero value's
// methods do nothing.
type Span struct{ s trace.Span }

// Root starts an op's root span named name with tp's tracer, a child of
// the span ctx carries (a caller's traceparent, Extract). A nil tp is
// tracing off: ctx comes back as it is and the Span does nothing.
func Root(ctx context.Context, tp trace.TracerProvider, name string) (context.Context, Span) {
	if tp == nil {
		return ctx, Span{}
	}
	ctx, s := tp.Tracer(Scope).Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
	return ctx, Span{s}
}

// Start starts a child span named name of ctx's span when that span is
// recording; otherwise it returns ctx and a Span that does nothing,
// without allocating.
func Start(ctx context.Context, name string) (context.Context, Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, Span{}
	}
	ctx, s := parent.TracerProvider().Tracer(Scope).Start(ctx, name)
	return ctx, Span{s}
}

// Recording reports whether the span records (tracing is on for it).
func (s Span) Recording() bool { return s.s != nil && s.s.IsRecording() }

// End ends the span.
func (s Span) End() {
	if s.s != nil {
		s.s.End()
	}
}

// Str sets a string attribute: key must be one of this package's keys
// and v a registry name or a code, never a value a caller chose.
func (s Span) Str(key attribute.Key, v string) {
	if s.s != nil && v != "" {
		s.s.SetAttributes(key.String(v))
	}
}

// Int sets an integer attribute (a status or a count).
func (s Span) Int(key attribute.Key, v int) {
	if s.s != nil {
		s.s.SetAttributes(key.Int(v))
	}
}

// Fail marks the span failed with code (an api code such as
// "egress_denied"): the code is both the attribute and the status
// description, so no error message (which may quote a provider) is kept.
func (s Span) Fail(code string) {
	if s.s != nil && code != "" {
		s.s.SetAttributes(KeyCode.String(code))
		s.s.SetStatus(codes.Error, code)
	}
}

// Extract returns ctx with the remote span context of the request's W3C
// traceparent (and tracestate) header, when tp is not nil and the header
// is valid. The remote span is only the parent of the op's root span:
// nothing else reads it, and the sampling decision stays this process's
// (Sampler). Baggage is not read.
func Extract(ctx context.Context, tp trace.TracerProvider, h http.Header) context.Context {
	if tp == nil || h.Get("traceparent") == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(h))
}
