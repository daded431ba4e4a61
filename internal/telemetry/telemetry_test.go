package telemetry

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSetup(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		cfg       Config
		exporting bool
		endpoint  string
		err       error
	}{
		{"nothing set", Config{Getenv: env(nil)}, false, "", nil},
		{"flag", Config{Endpoint: "http://127.0.0.1:4318", Getenv: env(nil)}, true, "http://127.0.0.1:4318", nil},
		{"environment", Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})}, true, "http://127.0.0.1:4318", nil},
		{"traces endpoint wins", Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318/v1/traces"})}, true, "http://b:4318/v1/traces", nil},
		{"grpc", Config{Endpoint: "http://127.0.0.1:4317", Protocol: ProtocolGRPC, Getenv: env(nil)}, true, "http://127.0.0.1:4317", nil},
		{"grpc from the environment", Config{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})}, true, "http://127.0.0.1:4317", nil},
		{"disabled", Config{Endpoint: "http://127.0.0.1:4318", Getenv: env(map[string]string{"OTEL_SDK_DISABLED": "true"})}, false, "", nil},
		{"exporter none", Config{Endpoint: "http://127.0.0.1:4318", Getenv: env(map[string]string{"OTEL_TRACES_EXPORTER": "none"})}, false, "", nil},
		{"in process", Config{Exporter: tracetest.NewInMemoryExporter(), Getenv: env(nil)}, true, "(in process)", nil},
		{"unknown protocol", Config{Endpoint: "http://127.0.0.1:4318", Protocol: "http/json", Getenv: env(nil)}, false, "", ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Setup(ctx, tc.cfg)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			defer tr.Shutdown(ctx)
			if tr.Exporting() != tc.exporting || tr.Endpoint != tc.endpoint {
				t.Errorf("exporting %v to %q, want %v to %q", tr.Exporting(), tr.Endpoint, tc.exporting, tc.endpoint)
			}
		})
	}
}

// TestSpansReachTheExporter: a span started on the provider is exported,
// with the service's resource.
func TestSpansReachTheExporter(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := Setup(context.Background(), Config{Exporter: exp, ServiceVersion: "v9", Getenv: env(map[string]string{"OTEL_SERVICE_NAME": "hubd-test"})})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Provider.Tracer("t").Start(context.Background(), "work")
	span.End()
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "work" {
		t.Fatalf("spans %v", spans)
	}
	attrs := map[string]string{}
	for _, a := range spans[0].Resource.Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	if attrs["service.version"] != "v9" || attrs["service.name"] == "" {
		t.Errorf("resource %v", attrs)
	}
}

func TestTracesURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://c:4318":        "http://c:4318/v1/traces",
		"http://c:4318/":       "http://c:4318/v1/traces",
		"https://c/otlp/v1/tr": "https://c/otlp/v1/tr",
	} {
		if got, err := tracesURL(in); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := tracesURL("c:4318"); err == nil {
		t.Error("a bare host:port was taken for a URL")
	}
}
