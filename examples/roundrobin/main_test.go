package main

import (
	"bytes"
	"context"
	"testing"
)

func TestRoundRobin(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), nil, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	want := `[5] alice: Let's cache the graph per session.
[6] bob: Invalidate it when the knobs change.
[7] carol: Knobs never change after open.
[8] alice: Then measure the hit rate.
[9] bob: And export it as a metric.
[10] carol: Agreed; ship it.
closed: max_turns
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
