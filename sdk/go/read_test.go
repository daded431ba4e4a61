package sdkgo_test

import (
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
)

// TestReadLogPages: the hub answers a read in capped pages; ReadLog reads
// as many as the caller's limit takes, and stops at the log's end.
func TestReadLogPages(t *testing.T) {
	h := hubtest.New(t, hubtest.Options{})
	ctx := testCtx(t)
	alice := dial(t, h.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: "conversation@1", Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2300 // with the invite and the open: 2302
	for range n {
		if _, err := alice.SendText(ctx, s.ID(), "x"); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ from, limit, want int }{
		{1, 2500, n + 2}, {1, 1500, 1500}, {0, 0, 1000}, {2000, 1 << 30, n + 2 - 1999},
	} {
		es, err := alice.ReadLog(ctx, s.ID(), uint64(tc.from), tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != tc.want {
			t.Fatalf("ReadLog(from %d, limit %d): %d envelopes, want %d", tc.from, tc.limit, len(es), tc.want)
		}
		for i, e := range es {
			if want := uint64(max(tc.from, 1) + i); e.GetSeq() != want {
				t.Fatalf("envelope %d has seq %d, want %d", i, e.GetSeq(), want)
			}
		}
	}
}
