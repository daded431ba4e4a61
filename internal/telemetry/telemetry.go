package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Protocols of the OTLP exporter (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// ErrProtocol: an OTLP protocol hubd does not export with.
var ErrProtocol = errors.New("telemetry: unsupported OTLP protocol")

// Config says whether and where spans are exported. The zero value reads
// the environment.
type Config struct {
	// Endpoint is the OTLP endpoint URL, with the meaning of
	// OTEL_EXPORTER_OTLP_ENDPOINT ("http://collector:4318"; for
	// http/protobuf "/v1/traces" is added to a URL without a path). ""
	// leaves it to the environment; neither: nothing is exported.
	Endpoint string
	// Protocol is ProtocolGRPC or ProtocolHTTP; "" reads
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, then OTEL_EXPORTER_OTLP_PROTOCOL,
	// else http/protobuf (the OpenTelemetry default).
	Protocol string
	// ServiceVersion is the service.version resource attribute.
	ServiceVersion string
	// Exporter, when set, receives the spans synchronously instead of an
	// OTLP exporter (tests: tracetest.NewInMemoryExporter()).
	Exporter sdktrace.SpanExporter
	// Getenv reads the environment; default os.Getenv.
	Getenv func(string) string
}

// Tracing is the process's tracer provider.
type Tracing struct {
	// Provider starts spans: the SDK's when exporting, else a no-op.
	Provider trace.TracerProvider
	// Endpoint is where spans go ("" when not exporting; "(in process)"
	// for Config.Exporter).
	Endpoint string
	sdk      *sdktrace.TracerProvider
}

// Exporting reports whether spans are recorded and exported.
func (t *Tracing) Exporting() bool { return t.sdk != nil }

// Setup builds the tracer provider cfg asks for. OTEL_SDK_DISABLED=true
// or OTEL_TRACES_EXPORTER=none turn exporting off; OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES add to the resource; OTEL_TRACES_SAMPLER picks
// the sampler (default: parent-based, always on).
func Setup(ctx context.Context, cfg Config) (*Tracing, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = firstOf(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	off := strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none")
	if cfg.Exporter == nil && (endpoint == "" || off) {
		return &Tracing{Provider: noop.NewTracerProvider()}, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "hubd"), attribute.String("service.version", cfg.ServiceVersion)),
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	where := "(in process)"
	if cfg.Exporter != nil {
		opts = append(opts, sdktrace.WithSyncer(cfg.Exporter))
	} else {
		proto := firstOf(cfg.Protocol, getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), ProtocolHTTP)
		exp, err := exporter(ctx, proto, cfg.Endpoint)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
		where = endpoint
	}
	sdk := sdktrace.NewTracerProvider(opts...)
	return &Tracing{Provider: sdk, Endpoint: where, sdk: sdk}, nil
}

// exporter builds the OTLP exporter for proto; a flag's endpoint wins over
// the environment's, which the exporters read themselves.
func exporter(ctx context.Context, proto, endpoint string) (sdktrace.SpanExporter, error) {
	switch proto {
	case ProtocolGRPC:
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	case ProtocolHTTP:
		var opts []otlptracehttp.Option
		if endpoint != "" {
			u, err := tracesURL(endpoint)
			if err != nil {
				return nil, err
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u))
		}
		return otlptracehttp.New(ctx, opts...)
	}
	return nil, fmt.Errorf("%w %q: want %s or %s", ErrProtocol, proto, ProtocolGRPC, ProtocolHTTP)
}

// tracesURL adds the OTLP/HTTP traces path to a base endpoint URL without
// a path, as OTEL_EXPORTER_OTLP_ENDPOINT is read.
func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("telemetry: OTLP endpoint %q is not a URL like http://collector:4318", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// Shutdown flushes and stops the exporter, if any.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
