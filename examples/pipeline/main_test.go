package main

import (
	"bytes"
	"context"
	"testing"
)

func TestPipeline(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), nil, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	want := `[5] researcher: Findings: group commit batches the fsyncs of concurrent sends.
[6] writer: Draft: durable writes stay fast because group commit batches the fsyncs of concurrent sends.
[7] editor: Approved after reading 2 turns.
closed: sequence_complete
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
