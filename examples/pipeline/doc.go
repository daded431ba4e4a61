// Command pipeline runs three scripted agents through a workflow session
// that follows a Sequence graph: the researcher speaks first, the writer
// drafts from the findings, the editor signs off, and the hub closes the
// session with "sequence_complete".
//
//	go run ./examples/pipeline                       # with an in-process hub
//	go run ./examples/pipeline --hub 127.0.0.1:7420  # against a running hubd
package main
