package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/hubd/hubd/agentsdk"
)

func TestTriage(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), nil, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	want := `[5] router: The customer was charged twice; over to billing. [handoff transfer_to_billing]
[6] billing: Refund of the duplicate charge issued. [set fixed_by_billing=true]
[7] router: They cannot log in either; over to tech. [handoff transfer_to_tech]
[8] tech: Password reset link sent; the login works again. [set fixed_by_tech=true]
[9] router: Both problems are solved. [finish resolved]
closed: resolved
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestGraphMatchesFile: the builders write the checked-in graph.
func TestGraphMatchesFile(t *testing.T) {
	raw, err := os.ReadFile("../graphs/triage.json")
	if err != nil {
		t.Fatal(err)
	}
	var file agentsdk.Graph
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(Graph())
	b, _ := json.Marshal(file)
	if !bytes.Equal(a, b) {
		t.Errorf("builders:\n%s\nfile:\n%s", a, b)
	}
}
