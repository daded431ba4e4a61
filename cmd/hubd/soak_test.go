package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestE2ESoakShort is the short soak of CI (hubload --soak against the
// real binary): 1,000 conversations kept open under load for 10 s with the
// hub's RSS sampled (bounded: at most 3 times its warm-up value, which a
// short run allows for badger's filling memtables; the long soak of
// docs/OPERATIONS.md holds 1.5), then 10 rounds of kill -9 in the middle
// of the load, each checked: every acknowledged send is in the log.
func TestE2ESoakShort(t *testing.T) {
	hubd := hubdBinary(t)
	hubload := buildBinary(t, "./cmd/hubload")
	code, out, errOut := runBinary(t, hubload, "", "--soak", "--hubd", hubd, "--data", t.TempDir(),
		"--sessions", "1000", "--senders", "16", "--duration", "6s", "--interval", "1s",
		"--rounds", "6", "--round-load", "1s", "--max-rss-growth", "3")
	t.Logf("hubload --soak:\n%s", out)
	if code != 0 {
		t.Fatalf("hubload --soak: exit %d\n%s", code, tail(errOut, 2000))
	}
	rounds := regexp.MustCompile(`round (\d+): .* acked (\d+), found (\d+)`).FindAllStringSubmatch(out, -1)
	if len(rounds) != 6 {
		t.Fatalf("%d rounds reported, want 6", len(rounds))
	}
	for _, r := range rounds {
		acked, _ := strconv.Atoi(r[2])
		if acked == 0 || r[2] != r[3] {
			t.Errorf("round %s: acked %s, found %s", r[1], r[2], r[3])
		}
	}
	if samples := strings.Count(out, " rss="); samples < 4 {
		t.Errorf("%d RSS samples printed, want one a second", samples)
	}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
