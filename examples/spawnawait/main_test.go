package main

import (
	"bytes"
	"context"
	"testing"
)

// TestSpawnAwait runs the example against an in-process hub. The three
// children run at once and close in any order, but the feed is the user's
// view of the root (the planner's summary is in topic order) and the tree
// lists the children in the order they were opened, so the output is
// exact.
func TestSpawnAwait(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), nil, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	want := `user: How do Postgres, SQLite, etcd make a write durable?
planner delegates (blocking, await all) to researcher, writer (topic=Postgres); researcher, writer (topic=SQLite); researcher, writer (topic=etcd)
planner: 3 of 3 done (6480 tokens): Postgres: durable once it fsyncs the WAL at commit, batching concurrent commits (commit_delay). SQLite: durable once it fsyncs the WAL file at commit in WAL mode with synchronous=FULL. etcd: durable once it fsyncs its raft log before a majority acknowledges the entry. [usage 1500 in, 250 out, $0.0120]
user: Thanks! [finish answered]
call tree:
  user, planner: conversation@1 CLOSED answered, 3 turns, usage 1500 in, 250 out, $0.0120
    researcher, writer (topic=Postgres): workflow@1 CLOSED finished, 2 turns, usage 2100 in, 260 out, $0.0110, 2 tool calls
    researcher, writer (topic=SQLite): workflow@1 CLOSED finished, 2 turns, usage 1900 in, 260 out, $0.0110, 2 tool calls
    researcher, writer (topic=etcd): workflow@1 CLOSED finished, 2 turns, usage 1700 in, 260 out, $0.0110, 2 tool calls
tree usage: 7200 in, 1030 out, $0.0450, 6 tool calls
closed: answered
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
