// Package export builds the TracerProvider of a pinned service from the
// standard OTEL_* environment variables: an OTLP/HTTP exporter when one is
// configured, nothing (tracing off) otherwise. It imports nothing of
// pinned's.
package export

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// ErrConfig marks a tracing configuration the service refuses (an
// unsupported exporter or protocol, a bad sampler argument): bad
// configuration, exit 2.
var ErrConfig = errors.New("tracing configuration")

// Getenv is os.Getenv's shape.
type Getenv func(string) string

// Enabled reports whether the environment asks for traces: an OTLP
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER=otlp, and
// neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none. Off is
// the default.
func Enabled(env Getenv) bool {
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(env("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return env("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New returns the TracerProvider the environment configures, or nil when
// tracing is off (Enabled). The exporter is OTLP over HTTP/protobuf; the
// endpoint, headers, TLS, timeout and compression come from the standard
// OTEL_EXPORTER_OTLP_* variables (read by the exporter itself), the
// resource from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (default
// service.name is service). Shut the provider down on exit to flush it.
// An error wraps ErrConfig.
func New(ctx context.Context, env Getenv, service, version string) (*sdktrace.TracerProvider, error) {
	if !Enabled(env) {
		return nil, nil
	}
	if v := strings.TrimSpace(env("OTEL_TRACES_EXPORTER")); v != "" && !strings.EqualFold(v, "otlp") {
		return nil, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q is not supported (use otlp or none)", ErrConfig, v)
	}
	proto := env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = env("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, fmt.Errorf("%w: OTLP protocol %q is not supported (use http/protobuf)", ErrConfig, proto)
	}
	sampler, err := Sampler(env)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: the OTLP exporter: %v", ErrConfig, err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.version", version)))
	if err != nil {
		res = resource.Default()
	}
	if env("OTEL_SERVICE_NAME") == "" && !strings.Contains(env("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		if r, err := resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", service))); err == nil {
			res = r
		}
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(sampler)), nil
}

// Sampler is the sampler of OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG (always_on, always_off, traceidratio and their
// parentbased_ forms; default always_on). A caller's traceparent is only
// a parent: its sampled flag never decides, so a bot cannot switch its
// ops' traces off or on. A local parent (a span of this process) does.
func Sampler(env Getenv) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(env("OTEL_TRACES_SAMPLER")))
	base := sdktrace.AlwaysSample()
	switch strings.TrimPrefix(name, "parentbased_") {
	case "", "always_on":
	case "always_off":
		base = sdktrace.NeverSample()
	case "traceidratio":
		ratio := 1.0
		if arg := strings.TrimSpace(env("OTEL_TRACES_SAMPLER_ARG")); arg != "" {
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || r < 0 || r > 1 {
				return nil, fmt.Errorf("%w: OTEL_TRACES_SAMPLER_ARG=%q is not a ratio from 0 to 1", ErrConfig, arg)
			}
			ratio = r
		}
		base = sdktrace.TraceIDRatioBased(ratio)
	default:
		return nil, fmt.Errorf("%w: OTEL_TRACES_SAMPLER=%q is not supported (use always_on, always_off or traceidratio)", ErrConfig, name)
	}
	return sdktrace.ParentBased(base,
		sdktrace.WithRemoteParentSampled(base), sdktrace.WithRemoteParentNotSampled(base)), nil
}
