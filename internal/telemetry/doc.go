// Package telemetry sets up hubd's OpenTelemetry tracing: an OTLP exporter
// when an endpoint is configured (the --otlp-endpoint flag or the standard
// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// variables), otherwise a no-op provider, with which traceparents are
// still carried from callers to envelopes but no span is recorded. The
// provider is returned, never installed globally.
package telemetry
