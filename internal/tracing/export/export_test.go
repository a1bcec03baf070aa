package export

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func envOf(m map[string]string) Getenv { return func(k string) string { return m[k] } }

// TestEnabled: tracing is off unless an OTLP endpoint or exporter is
// named, and OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none switch it off.
func TestEnabled(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"default", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Enabled(envOf(tc.env)); got != tc.want {
				t.Fatalf("Enabled = %v, want %v", got, tc.want)
			}
			tp, err := New(context.Background(), envOf(tc.env), "pinned-sidecar", "test")
			if err != nil {
				t.Fatal(err)
			}
			if (tp != nil) != tc.want {
				t.Fatalf("provider %v, want on = %v", tp, tc.want)
			}
			if tp != nil {
				_ = tp.Shutdown(context.Background())
			}
		})
	}
}

// TestNewRefusesWhatItCannotDo: an exporter, protocol or sampler it does
// not support is ErrConfig, never a silent default.
func TestNewRefusesWhatItCannotDo(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"zipkin", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
		{"bad ratio", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}},
		{"unknown sampler", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_TRACES_SAMPLER": "jaeger_remote"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := New(context.Background(), envOf(tc.env), "pinned-sidecar", "test")
			if !errors.Is(err, ErrConfig) || tp != nil {
				t.Fatalf("New = %v, %v; want ErrConfig", tp, err)
			}
		})
	}
}

// TestSamplerIgnoresTheCallersFlag: a remote parent's sampled flag
// decides nothing: always_on samples under an unsampled caller, and
// always_off does not sample under a sampled one.
func TestSamplerIgnoresTheCallersFlag(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	for _, tc := range []struct {
		sampler string
		flags   trace.TraceFlags
		want    sdktrace.SamplingDecision
	}{
		{"always_on", 0, sdktrace.RecordAndSample},
		{"parentbased_always_on", 0, sdktrace.RecordAndSample},
		{"always_off", trace.FlagsSampled, sdktrace.Drop},
	} {
		t.Run(tc.sampler, func(t *testing.T) {
			s, err := Sampler(envOf(map[string]string{"OTEL_TRACES_SAMPLER": tc.sampler}))
			if err != nil {
				t.Fatal(err)
			}
			parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: tc.flags, Remote: true})
			ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
			got := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: tid, Name: "pinned.op"})
			if got.Decision != tc.want {
				t.Fatalf("decision %v, want %v", got.Decision, tc.want)
			}
		})
	}
}
