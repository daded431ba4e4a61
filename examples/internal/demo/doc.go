// Package demo is the plumbing the example programs share: their flags, an
// in-process hub (or the one --hub names), one goroutine per scripted agent
// serving its turns with agentsdk.Serve, and the transcript.
package demo
